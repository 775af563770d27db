import type { SermonSource } from '../sources';

export const lordsPrayer = {
  id: 'lords-prayer',
  title: 'Teach Us to Pray',
  language: 'en',
  passages: [
    `The disciples watched Jesus pray, and afterwards one of them asked, "Lord, teach us to pray." They did not ask him to teach them to preach or to heal. They had seen something in his praying that they wanted for themselves. So he gave them a short prayer, one we have said so often that we can say it without thinking. This morning let us slow it down, line by line.`,
    `"Our Father in heaven, hallowed be your name." Notice that it begins with our, not my. Even alone in your room, you pray as part of a family. And it begins with God's name, not our needs. Hallowed means treated as holy. Before we ask God for anything, we remember who we are talking to, and we ask that his name would be honoured in our lives and in our city.`,
    `"Your kingdom come, your will be done, on earth as it is in heaven." This is a dangerous prayer. We are asking God to change the world, and the first part of the world he usually changes is the person praying. Then comes, "Give us today our daily bread." Not a year's supply, just enough for today, like manna in the desert. We are taught to depend on God one day at a time.`,
    `"Forgive us our debts, as we also have forgiven our debtors." This is the only line Jesus comments on afterwards: if you do not forgive others their sins, your Father will not forgive yours. The prayer ties together the mercy we receive and the mercy we give. We cannot hold out one hand to receive forgiveness while the other hand is clenched into a fist against our neighbour.`,
    `"And lead us not into temptation, but deliver us from the evil one." We end the prayer honest about our weakness. We are not strong enough on our own, and there is real evil in the world. The church later added, "For yours is the kingdom and the power and the glory forever. Amen." The prayer ends where it began, with God, and our small requests are held inside his greatness.`,
  ],
} satisfies SermonSource;
