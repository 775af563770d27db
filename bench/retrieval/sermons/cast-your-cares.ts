import type { SermonSource } from '../sources';

export const castYourCares = {
  id: 'cast-your-cares',
  title: 'Three in the Morning',
  language: 'en',
  passages: [
    `Many of you know the hour I mean. It is three in the morning, the house is silent, and your mind is racing through every bill, every test result, every argument with your teenager. In daylight the problems looked manageable. At night they grow teeth. Anxiety is not a sign that you are a bad Christian. The psalmists lay awake too, and they wrote their sleepless nights into the prayer book of Israel.`,
    `Peter wrote, "Cast all your anxiety on him because he cares for you." The word cast is the one used when the disciples threw their cloaks onto the colt before Jesus rode into Jerusalem. It is a deliberate act of throwing something heavy off your own shoulders and onto another. You do not cast a burden by ignoring it. You name it, pick it up and hand it over, and then you refuse to take it back.`,
    `Paul writes from a prison cell: "Do not be anxious about anything, but in every situation, by prayer and petition, with thanksgiving, present your requests to God. And the peace of God, which transcends all understanding, will guard your hearts and your minds in Christ Jesus." Notice that the promise is not that every problem will be solved by morning. The promise is peace, standing guard over your heart like a soldier at the gate.`,
    `Here is a practice for the sleepless hours. Breathe in slowly and pray, "Lord Jesus Christ," then breathe out and pray, "have mercy on me." Or keep a notebook by the bed, write each worry down, one line each, and say over each line, "This one is yours, Lord." Christians have prayed like this for centuries. It is not a trick to switch off your mind; it is a way of handing the night back to God.`,
    `And please hear this: if the anxiety does not lift, if it stops you eating or working or leaving the house, talk to someone. Seeing a counsellor or a doctor is not a failure of faith, any more than wearing glasses is. God works through medicine and through friends who listen. The church should be the safest place to say, "I am not coping," and to hear someone answer, "Then we will carry this together."`,
  ],
} satisfies SermonSource;
