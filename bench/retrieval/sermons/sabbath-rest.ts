import type { SermonSource } from '../sources';

export const sabbathRest = {
  id: 'sabbath-rest',
  title: 'Remember the Sabbath',
  language: 'en',
  passages: [
    `On the seventh day God finished the work he had been doing, and on the seventh day he rested from all his work. And God blessed the seventh day and made it holy. Think about that: the Almighty, who does not grow tired, chose to stop. The first thing in all creation that God called holy was not a place or a person but a day, a rhythm of time set apart for rest.`,
    `When the Israelites came out of Egypt, they had been slaves for four hundred years, making bricks seven days a week with no day off. In the wilderness God fed them with manna, and on the sixth day the manna fell twice as thick, so that they could gather a double portion and rest on the seventh. Sabbath was God's way of teaching former slaves that they were no longer owned by their work.`,
    `Our culture has built new brick factories, and we carry them in our pockets. The email arrives at ten at night, the phone buzzes during dinner, and we measure our worth by how busy we are. Rest has become a kind of resistance. To keep Sabbath is to declare, once a week, that the world will keep turning without me, and that my value does not come from my productivity.`,
    `Jesus was criticised for healing on the Sabbath, and he answered, "The Sabbath was made for man, not man for the Sabbath." The day is a gift, not a burden or a test of rule-keeping. It is not about a list of forbidden activities. It is about delight: long meals with friends, a walk in the hills, an afternoon nap without guilt, worship that is not squeezed between errands.`,
    `So here is an invitation for this week. Choose twenty-four hours. Switch off the phone, or at least put it in a drawer. Do not shop, do not answer work messages, do not tidy the garage. Eat with people you love. Pray, read, sleep, play with your children. It will feel strange, even anxious, at first. Keep at it. Rest is a skill we relearn slowly, and God is patient with beginners.`,
  ],
} satisfies SermonSource;
