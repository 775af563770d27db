import type { SermonSource } from '../sources';

export const widowsMite = {
  id: 'widows-mite',
  title: 'Two Small Coins',
  language: 'en',
  passages: [
    `Jesus sat down opposite the place where the offerings were put and watched the crowd putting their money into the temple treasury. Many rich people threw in large amounts. You can imagine the sound of it, coins ringing against the metal trumpets of the collection boxes. Then a poor widow came and put in two very small copper coins, worth only a fraction of a penny. Hardly anyone would have noticed her.`,
    `Jesus noticed. He called his disciples to him and said, "Truly I tell you, this poor widow has put more into the treasury than all the others. They all gave out of their wealth; but she, out of her poverty, put in everything, all she had to live on." Heaven does not measure a gift by its size but by its cost. What we keep back tells God as much as what we give.`,
    `This story is not a demand that the poor empty their purses. Just before it, Jesus had condemned the teachers of the law who devour widows' houses. He was angry at a system that took the last coins of the vulnerable. So the point is not that God needs her money. The point is that her open hand reveals a heart that trusts God completely, and that generosity is not the privilege of the rich.`,
    `Paul told the Corinthians that each of you should give what you have decided in your heart to give, not reluctantly or under compulsion, for God loves a cheerful giver. Generosity is a habit we practise before it becomes a joy we feel. Many families in this church set aside the first portion of their income, before the bills and the shopping, so that giving is not whatever happens to be left over at the end of the month.`,
    `Generosity is about more than money. It is time given to a lonely neighbour, a spare room offered, a meal cooked for a family with a new baby, a skill shared without charge. Hold your possessions with an open hand. Everything we have was given to us first, and we are only stewards of it for a while. The widow had two coins; the question is what our two coins are this week.`,
  ],
} satisfies SermonSource;
