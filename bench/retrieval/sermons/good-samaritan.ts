import type { SermonSource } from '../sources';

export const goodSamaritan = {
  id: 'good-samaritan',
  title: 'Who Is My Neighbour?',
  language: 'en',
  passages: [
    `An expert in the law stood up to test Jesus. "Teacher, what must I do to inherit eternal life?" Jesus asked what the law said, and he answered well: love God with all your heart, soul, strength and mind, and love your neighbour as yourself. "Do this and you will live," said Jesus. But wanting to justify himself, the lawyer asked, "And who is my neighbour?" He wanted to know where his duty ended.`,
    `Jesus told a story. A man was going down from Jerusalem to Jericho, a steep and lonely road, when he was attacked by robbers. They stripped him of his clothes, beat him and went away, leaving him half dead. A priest happened to be going down the same road, and when he saw the man, he passed by on the other side. So too a Levite came to the place, saw him, and passed by.`,
    `The priest and the Levite may have had their reasons. Touching a body that might be dead would make them ritually unclean for temple service. The robbers might still be nearby. They were busy and late. We all have reasons to pass by. Every day we walk past needs that are inconvenient, risky or simply not our problem, and our excuses sound sensible to us.`,
    `But a Samaritan, a despised foreigner from a people the Jews avoided, came where the man was, and when he saw him, he took pity on him. He bandaged his wounds, pouring on oil and wine, put him on his own donkey, brought him to an inn and took care of him. The next day he gave the innkeeper two silver coins and promised to pay whatever more it cost when he returned.`,
    `Then Jesus turned the question around: "Which of these three do you think was a neighbour to the man who fell into the hands of robbers?" The lawyer could not even bring himself to say the word Samaritan. He said, "The one who had mercy on him." Jesus told him, "Go and do likewise." The question is not who deserves my help but whether I will become a neighbour to whoever is lying in my road.`,
  ],
} satisfies SermonSource;
