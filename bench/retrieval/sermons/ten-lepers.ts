import type { SermonSource } from '../sources';

export const tenLepers = {
  id: 'ten-lepers',
  title: 'Only One Came Back',
  language: 'en',
  passages: [
    `On the way to Jerusalem, as Jesus was going into a village, ten men who had leprosy met him. They stood at a distance, as the law required, and called out in a loud voice, "Jesus, Master, have pity on us!" Leprosy meant more than a disease of the skin. It meant exile from family, from worship, from every ordinary touch. They were the living dead of their society.`,
    `Jesus told them, "Go, show yourselves to the priests." And as they went, they were cleansed. Ten men healed at once. Nine of them hurried on, no doubt to the priests, to their families, to the lives they had lost. One of them, when he saw he was healed, came back, praising God in a loud voice. He threw himself at Jesus' feet and thanked him, and he was a Samaritan.`,
    `Jesus asked, "Were not all ten cleansed? Where are the other nine? Has no one returned to give praise to God except this foreigner?" The nine were not wicked. They were simply busy with their blessing and forgot the one who blessed them. Ingratitude is rarely a decision; it is usually forgetfulness. The gift becomes more interesting than the giver, and the healed hand forgets the healing hand.`,
    `Paul tells the Thessalonians to give thanks in all circumstances, for this is God's will for you in Christ Jesus. Notice that he does not say for all circumstances. We are not asked to thank God for cancer or for a car crash. But in every circumstance, even the worst, there is something to be thankful for, and saying it out loud changes how we see everything else.`,
    `Try this for a month. Each night before sleep, write down three things from the day for which you are grateful. Be specific: not my family, but the way my daughter laughed at supper. Researchers find that people who practise gratitude sleep better and are less anxious. Christians have always known it by another name. Like the Samaritan, we turn around, come back, and say thank you.`,
  ],
} satisfies SermonSource;
