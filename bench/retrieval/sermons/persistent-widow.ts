import type { SermonSource } from '../sources';

export const persistentWidow = {
  id: 'persistent-widow',
  title: 'The Widow and the Judge',
  language: 'en',
  passages: [
    `Jesus told his disciples a parable to show them that they should always pray and not give up. In a certain town there was a judge who neither feared God nor cared what people thought. And there was a widow in that town who kept coming to him with the plea, "Grant me justice against my adversary." She had no money for a bribe and no husband to speak for her. All she had was persistence.`,
    `For some time the judge refused. But finally he said to himself, "Even though I don't fear God or care what people think, yet because this widow keeps bothering me, I will see that she gets justice, so that she won't eventually come and attack me." The word Jesus uses is a boxing term; literally, so that she won't give me a black eye. It is a funny story, and Jesus meant it to make us smile.`,
    `But do not misread the parable. God is not like the unjust judge, worn down by nagging until he gives in. The argument runs the other way: if even a corrupt judge eventually does right, how much more will God, who loves his chosen ones, bring about justice for those who cry out to him day and night? We keep praying not because God is reluctant but because we are learning to trust.`,
    `Some of you have been praying for the same thing for years: a child who has walked away from faith, a marriage that has gone cold, a diagnosis that does not change. Unanswered prayer is one of the hardest parts of the Christian life. The psalmists knew it, and so did Jesus in the garden. Persistence is not pretending the silence does not hurt. It is knocking on the door again anyway.`,
    `Jesus ends with a question that should unsettle us: "When the Son of Man comes, will he find faith on the earth?" The question is not whether God will be faithful; it is whether we will keep praying. So keep a list. Write down the names and requests you bring to God. Keep bringing them. And when an answer comes, years later, write that down too, so that your children will know the story.`,
  ],
} satisfies SermonSource;
