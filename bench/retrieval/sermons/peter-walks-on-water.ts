import type { SermonSource } from '../sources';

export const peterWalksOnWater = {
  id: 'peter-walks-on-water',
  title: 'Out of the Boat',
  language: 'en',
  passages: [
    `After feeding the five thousand, Jesus sent his disciples ahead of him across the lake while he went up a mountainside alone to pray. By the middle of the night the boat was a considerable distance from land, buffeted by the waves because the wind was against it. These were experienced fishermen, and they were rowing hard and getting nowhere. Then, shortly before dawn, Jesus came to them, walking on the lake.`,
    `When the disciples saw him walking on the water, they were terrified. "It's a ghost," they said, and cried out in fear. But Jesus immediately said to them, "Take courage! It is I. Don't be afraid." Then Peter, impulsive as always, said, "Lord, if it's you, tell me to come to you on the water." And Jesus said just one word: "Come." Peter had asked for an invitation, and he received one.`,
    `Peter got down out of the boat, walked on the water and came toward Jesus. For a few steps he did what no human being had ever done. But when he saw the wind, he was afraid and, beginning to sink, cried out, "Lord, save me!" Immediately Jesus reached out his hand and caught him. "You of little faith," he said, "why did you doubt?"`,
    `It is easy to mock Peter for sinking, but remember that eleven disciples stayed in the boat. Only one got out. Peter's faith was small, but it was real enough to step over the side. And when he looked at the storm instead of at Jesus, he began to go under. Most of us know that feeling: we start out trusting God, and then the news, the bills and the diagnosis fill our vision.`,
    `Notice too that Peter's prayer was one of the shortest in the Bible: Lord, save me. Three words are enough when you are sinking. And Jesus did not wait for him to improve his faith before he reached out. He caught him first and asked questions afterwards. Whatever water you are sinking in today, the hand is already stretched out toward you.`,
  ],
} satisfies SermonSource;
