import type { SermonSource } from '../sources';

export const welcomingTheStranger = {
  id: 'welcoming-the-stranger',
  title: 'Angels Unawares',
  language: 'en',
  passages: [
    `Abraham was sitting at the entrance of his tent in the heat of the day near the great trees of Mamre when he looked up and saw three men standing nearby. He did not know who they were. He ran to meet them, bowed low, and begged them to stay. He had water brought to wash their feet, Sarah baked bread, and he chose a tender calf for the meal. Only later did he discover that he had been entertaining the Lord himself.`,
    `The letter to the Hebrews remembers that story: "Do not forget to show hospitality to strangers, for by so doing some people have shown hospitality to angels without knowing it." The Greek word for hospitality is philoxenia, love of the stranger. Its opposite is xenophobia, the fear of the stranger. Scripture asks us to choose love over fear when an unfamiliar face appears at our door.`,
    `God told Israel again and again: "When a foreigner resides among you in your land, do not mistreat them. Love them as yourself, for you were foreigners in Egypt." Israel's memory of being immigrants and slaves was meant to shape how they treated the newcomer. Those who have been outsiders are called never to forget what it felt like to be on the outside, looking in through the window at someone else's table.`,
    `In our town today there are families who arrived with a single suitcase, fleeing war and persecution. Some of them sit in the back row of this church, unsure whether they are wanted. Hospitality can be as simple as learning someone's name and pronouncing it properly, inviting them home for a meal, helping with a form in a language they are still learning, or sitting with them at the council office.`,
    `Jesus said that on the last day the King will say, "I was a stranger and you invited me in." And the righteous will ask, "When did we see you a stranger?" He will answer, "Whatever you did for one of the least of these brothers and sisters of mine, you did for me." When we open our tables to strangers, we may find, like Abraham, that Christ has been our guest all along.`,
  ],
} satisfies SermonSource;
