import type { SermonSource } from '../sources';

export const maryAndMartha = {
  id: 'mary-and-martha',
  title: 'The Better Part',
  language: 'en',
  passages: [
    `As Jesus and his disciples were on their way, he came to a village where a woman named Martha opened her home to him. Thirteen hungry men had just walked in. There was bread to bake, water to draw, a meal to prepare. Martha did what any good host would do: she went to the kitchen. Her sister Mary, meanwhile, sat at the Lord's feet listening to what he said.`,
    `Martha was distracted by all the preparations that had to be made. Finally she came to him and asked, "Lord, don't you care that my sister has left me to do the work by myself? Tell her to help me!" Many of us have a lot of sympathy for Martha. Someone has to cook. Churches run on Marthas, and the Marthas are often tired and unthanked.`,
    `"Martha, Martha," the Lord answered, "you are worried and upset about many things, but few things are needed, or indeed only one. Mary has chosen what is better, and it will not be taken away from her." Jesus did not criticise her cooking. He criticised her worry, the way her service had swallowed her peace and turned her against her own sister.`,
    `The danger for busy Christians is not laziness but distraction. We can be so occupied doing things for Jesus that we never spend time with Jesus. Serving is good, but it must flow from sitting at his feet, or it becomes a grim duty. Before the work of the week begins, we need the one thing needed: to listen to him, to be still and know that he is God.`,
    `So this week, find your own place at his feet. It might be ten minutes with the Gospel of Luke before the children wake, a quiet lunch break with your phone switched off, or a walk where you talk to God instead of planning the next meeting. The dishes will still be there afterwards. The better part, Jesus promised, will not be taken away from you.`,
  ],
} satisfies SermonSource;
