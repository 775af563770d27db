import type { SermonSource } from '../sources';

export const elderBrother = {
  id: 'elder-brother',
  title: 'The Brother Who Stayed Home',
  language: 'en',
  passages: [
    `We usually stop the parable at the party, but Jesus did not. Meanwhile, the older son was out in the field. As he came near the house he heard music and dancing, and he asked one of the servants what was going on. "Your brother has come home," the servant said, "and your father has killed the fattened calf because he has him back safe and sound." The older brother became angry and refused to go in.`,
    `Listen to his complaint: "All these years I have been slaving for you and never disobeyed your orders, yet you never gave me even a young goat so I could celebrate with my friends." Notice the word slaving. He lived in his father's house as an employee, not as a son. He kept every rule and still did not know his father's heart. You can sit in church every Sunday and be as far from home as the brother in the distant country.`,
    `And notice that he will not say "my brother." He says "this son of yours, who has squandered your property with prostitutes." Resentment always keeps careful records. The older son had been counting for years: the hours he worked, the goats he never got, the sins of his sibling. Self-righteousness is a quiet famine. It starves the heart while the stomach is full, and it makes grace look like an injustice.`,
    `So the father went out to him as well. Twice in one day this father leaves the house to go after a lost son: once running down the road, once pleading in the courtyard. "My son," he said, "you are always with me, and everything I have is yours. But we had to celebrate and be glad." The father does not love the rule-keeper less. He invites him to join the feast instead of standing outside it.`,
    `The story ends without telling us whether the older brother went in. Jesus leaves the door open on purpose, because he was speaking to the Pharisees who grumbled that he ate with sinners. The question is left for us. When God welcomes someone we think does not deserve it, will we stand outside with our arms folded, or will we go in, take our brother's hand, and dance?`,
  ],
} satisfies SermonSource;
