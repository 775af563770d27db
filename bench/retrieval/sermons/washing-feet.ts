import type { SermonSource } from '../sources';

export const washingFeet = {
  id: 'washing-feet',
  title: 'A Towel and a Basin',
  language: 'en',
  passages: [
    `It was the evening of the Passover meal. The disciples had walked dusty roads in sandals, and their feet were filthy. In every household a servant would wash the guests' feet at the door, but there was no servant in the upper room, and none of the twelve volunteered. Luke tells us that on that same evening they were arguing about which of them was the greatest.`,
    `Jesus got up from the meal, took off his outer clothing, and wrapped a towel around his waist. He poured water into a basin and began to wash his disciples' feet, drying them with the towel. The Lord of glory knelt on the floor and did the job of the lowest slave in the house. He washed the feet of Peter, who would deny him, and of Judas, who would betray him.`,
    `Peter objected: "Lord, you shall never wash my feet." It is hard to be served. Pride shows itself not only in refusing to serve others but in refusing to let others serve us. Jesus answered, "Unless I wash you, you have no part with me." Humility begins with admitting that we need to be washed, that we cannot make ourselves clean, however hard we scrub.`,
    `At a wedding feast, Jesus noticed how the guests picked the places of honour at the table, and he told them: "When you are invited, take the lowest place, so that when your host comes he will say, 'Friend, move up to a better place.' For all those who exalt themselves will be humbled, and those who humble themselves will be exalted." Humility is not thinking less of yourself; it is thinking of yourself less.`,
    `Paul tells the Philippians to have the same mindset as Christ Jesus, who, being in very nature God, made himself nothing, taking the very nature of a servant. The way up in God's kingdom is down. So who is waiting for you to pick up a towel this week? The neighbour whose bins need taking out, the colleague whose work nobody thanks, the child whose mess is yours to clean up with a smile.`,
  ],
} satisfies SermonSource;
