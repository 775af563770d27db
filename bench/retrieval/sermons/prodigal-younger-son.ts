import type { SermonSource } from '../sources';

export const prodigalYoungerSon = {
  id: 'prodigal-younger-son',
  title: 'The Son Who Went Away',
  language: 'en',
  passages: [
    `A man had two sons, and the younger one said to his father, "Give me my share of the estate." In that culture the request meant something brutal: I wish you were dead, and I would like your money now. Astonishingly, the father divided his property between them and let him go. Not long after, the young man gathered everything he had and set off for a distant country, as far from his father's house as he could get.`,
    `There he squandered his wealth in wild living. When the money ran out, a severe famine swept through that whole country and he began to be in need. He hired himself out to a local farmer, who sent him into the fields to feed pigs. For a Jewish listener, there was no lower place to fall. He longed to fill his stomach with the pods the pigs were eating, and no one gave him anything.`,
    `Then comes one of the most hopeful phrases in Scripture: he came to himself. Hunger made him honest. He remembered that even the hired servants in his father's house had bread to spare, while he was starving. He rehearsed a speech: "Father, I have sinned against heaven and against you. I am no longer worthy to be called your son; make me like one of your hired servants." Then he got up and started the long walk home.`,
    `But while he was still a long way off, his father saw him and was filled with compassion. He ran to his son, threw his arms around him and kissed him. Old men in that village did not run; running meant hitching up your robes and shaming yourself in public. The father did not care. He took the shame on himself so that the whole village would see the boy was welcomed before anyone could throw a stone.`,
    `The son began his rehearsed speech, but the father interrupted him and called to the servants: "Quick! Bring the best robe and put it on him. Put a ring on his finger and sandals on his feet. Bring the fattened calf and kill it. Let us feast and celebrate, for this son of mine was dead and is alive again; he was lost and is found." Grace did not wait for the speech to be finished.`,
  ],
} satisfies SermonSource;
