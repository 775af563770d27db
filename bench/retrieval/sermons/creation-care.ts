import type { SermonSource } from '../sources';

export const creationCare = {
  id: 'creation-care',
  title: 'To Till and to Keep',
  language: 'en',
  passages: [
    `In the second chapter of Genesis, the Lord God took the man and put him in the garden of Eden to work it and take care of it. The Hebrew words can be translated to till and to keep, to serve and to guard. Our first job description was gardening. Human beings were placed in creation not as owners who may do whatever they like, but as servants entrusted with something precious.`,
    `"The earth is the Lord's, and everything in it, the world, and all who live in it." We did not make the rivers or the forests or the soil. We are tenants on land that belongs to someone else. When we poison a river or strip a hillside bare, we are not only harming our neighbours downstream; we are damaging property that belongs to God and that he called very good.`,
    `Paul writes that the whole creation has been groaning as in the pains of childbirth, waiting eagerly to be set free from its bondage to decay. Creation is not a stage set that will be thrown away when the play is over. God intends to renew heaven and earth, and the salvation Christ brings reaches even the soil and the sea. Caring for the earth is a sign of the world to come.`,
    `The law even gave the land its own Sabbath. Every seventh year the fields were to lie fallow, unploughed and unsown, so that the land could rest, and the poor and the wild animals could eat whatever grew by itself. Farmers today know what happens to soil that is never rested: it is exhausted and blows away. God's wisdom was ecological long before we had the word.`,
    `So what can a church do? We can start where we are. This spring our young people will clear rubbish from the creek behind the school. We are fitting solar panels to the hall roof, and the coffee after the service will be fair trade, served in real cups instead of plastic. None of this will save the planet alone. But faithfulness in small things is how stewards learn to care for large ones.`,
  ],
} satisfies SermonSource;
