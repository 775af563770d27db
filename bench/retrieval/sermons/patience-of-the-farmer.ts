import type { SermonSource } from '../sources';

export const patienceOfTheFarmer = {
  id: 'patience-of-the-farmer',
  title: 'The Farmer Waits',
  language: 'en',
  passages: [
    `James writes, "Be patient, then, brothers and sisters, until the Lord's coming. See how the farmer waits for the land to yield its valuable crop, patiently waiting for the autumn and spring rains." A farmer cannot shout at seeds to make them grow faster. He ploughs, sows, weeds and then waits. Much of farming is waiting, and so is much of the Christian life.`,
    `We live in an impatient age. We sigh when a web page takes three seconds to load, we tap our fingers in the supermarket queue, and we lean on the horn the moment the traffic light turns green. Speed has become our idea of a good life. But the fruit of the Spirit includes patience, and fruit cannot be rushed. It ripens in its own season, not in ours.`,
    `Abraham and Sarah waited twenty-five years between the promise of a son and the birth of Isaac. They were not always patient. They laughed, they doubted, they tried to hurry God's plan with Hagar, and it caused great pain. Yet God kept his word in the end. Their story tells us that patience is not the absence of struggle. It is staying with the promise through the long years in between.`,
    `Paul begins his great hymn to love with these words: love is patient, love is kind. Patience is first on the list. Think about what that means at home. Patience with a toddler asking why for the hundredth time, with an ageing parent who repeats the same story, with a colleague who is slow to learn. Patience is love that is willing to wait for another person to grow.`,
    `And God is patient with us. Peter says the Lord is not slow in keeping his promise, as some understand slowness. Instead he is patient with you, not wanting anyone to perish. Every day that the world continues is a day of mercy, another day for someone to turn around and come home. If God is so patient with us, surely we can be a little more patient with each other.`,
  ],
} satisfies SermonSource;
