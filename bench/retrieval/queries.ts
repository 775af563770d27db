import type { QuerySource } from './sources';

/**
 * What a listener might type to find a passage they half remember, each with
 * the passage it should find (its sermon and its place in it, from 0). Their
 * kind (near-verbatim, paraphrase, hard) is worked out from their words by
 * `kindOf` in ./set.ts, not written here.
 */
export const QUERIES: readonly QuerySource[] = [
  // Seventy times seven
  {
    text: 'how many times shall I forgive my brother when he sins against me',
    sermonId: 'forgiving-seventy-times-seven',
    passageIndex: 0,
  },
  {
    text: 'forgiving someone is different from trusting them again',
    sermonId: 'forgiving-seventy-times-seven',
    passageIndex: 2,
  },
  {
    text: 'nursing a grudge harms the one who carries it',
    sermonId: 'forgiving-seventy-times-seven',
    passageIndex: 3,
  },
  {
    text: 'the servant who was let off a huge debt and then choked a man over a small one',
    sermonId: 'forgiving-seventy-times-seven',
    passageIndex: 1,
  },
  // The younger son
  {
    text: 'he longed to fill his stomach with the pods the pigs were eating',
    sermonId: 'prodigal-younger-son',
    passageIndex: 1,
  },
  { text: 'the father ran to his son and hugged him', sermonId: 'prodigal-younger-son', passageIndex: 3 },
  {
    text: 'a runaway kid blows his inheritance on parties abroad',
    sermonId: 'prodigal-younger-son',
    passageIndex: 1,
  },
  {
    text: 'the boy comes to his senses when he is starving',
    sermonId: 'prodigal-younger-son',
    passageIndex: 2,
  },
  {
    text: 'best robe, a ring and sandals for the son who was lost',
    sermonId: 'prodigal-younger-son',
    passageIndex: 4,
  },
  // The elder brother
  { text: 'all these years I have been slaving for you', sermonId: 'elder-brother', passageIndex: 1 },
  {
    text: 'the older son was angry and would not go into the party',
    sermonId: 'elder-brother',
    passageIndex: 0,
  },
  {
    text: 'the obedient one who feels overlooked when the rebel is honoured',
    sermonId: 'elder-brother',
    passageIndex: 1,
  },
  {
    text: 'the father goes out a second time to plead with the son who stayed',
    sermonId: 'elder-brother',
    passageIndex: 3,
  },
  // Do not worry
  {
    text: 'look at the birds of the air, they do not sow or reap',
    sermonId: 'do-not-worry',
    passageIndex: 1,
  },
  { text: 'does worrying make you live any longer', sermonId: 'do-not-worry', passageIndex: 2 },
  { text: 'fretting about what to eat and what to wear', sermonId: 'do-not-worry', passageIndex: 0 },
  { text: 'God clothes the lilies so he will clothe you', sermonId: 'do-not-worry', passageIndex: 3 },
  // Three in the morning
  {
    text: 'cast all your anxiety on him because he cares for you',
    sermonId: 'cast-your-cares',
    passageIndex: 1,
  },
  { text: 'lying awake at night with my mind racing', sermonId: 'cast-your-cares', passageIndex: 0 },
  {
    text: 'is it a lack of faith to see a therapist for panic',
    sermonId: 'cast-your-cares',
    passageIndex: 4,
  },
  { text: 'a breathing prayer for the sleepless hours', sermonId: 'cast-your-cares', passageIndex: 3 },
  // Two small coins
  {
    text: 'this poor widow has put more into the treasury than all the others',
    sermonId: 'widows-mite',
    passageIndex: 1,
  },
  { text: 'giving cheerfully rather than reluctantly', sermonId: 'widows-mite', passageIndex: 3 },
  { text: 'being generous with your spare room and your time', sermonId: 'widows-mite', passageIndex: 4 },
  // Remember the Sabbath
  {
    text: 'the Sabbath was made for man, not man for the Sabbath',
    sermonId: 'sabbath-rest',
    passageIndex: 3,
  },
  { text: 'manna fell twice as thick on the sixth day', sermonId: 'sabbath-rest', passageIndex: 1 },
  { text: 'unplugging from work as a form of protest', sermonId: 'sabbath-rest', passageIndex: 2 },
  // Jesus wept
  { text: 'Jesus wept at the tomb of his friend Lazarus', sermonId: 'grief-lament', passageIndex: 0 },
  { text: "Job's friends sat with him in silence for seven days", sermonId: 'grief-lament', passageIndex: 3 },
  {
    text: 'is it okay to be furious at the Almighty after a funeral',
    sermonId: 'grief-lament',
    passageIndex: 1,
  },
  { text: 'the psalms give us permission to complain to God', sermonId: 'grief-lament', passageIndex: 2 },
  // Let justice roll down
  { text: 'let justice roll on like a river', sermonId: 'justice-for-the-poor', passageIndex: 1 },
  {
    text: 'leaving the edges of the field for the poor to glean',
    sermonId: 'justice-for-the-poor',
    passageIndex: 2,
  },
  {
    text: 'bosses who cheat labourers out of what they earned',
    sermonId: 'justice-for-the-poor',
    passageIndex: 3,
  },
  // Teach us to pray
  { text: 'give us today our daily bread', sermonId: 'lords-prayer', passageIndex: 2 },
  { text: 'the prayer begins with our Father, not my Father', sermonId: 'lords-prayer', passageIndex: 1 },
  { text: 'we must forgive others if we want to be forgiven', sermonId: 'lords-prayer', passageIndex: 3 },
  { text: 'the followers wanted lessons in talking to God', sermonId: 'lords-prayer', passageIndex: 0 },
  // The widow and the judge
  { text: 'grant me justice against my adversary', sermonId: 'persistent-widow', passageIndex: 0 },
  {
    text: 'praying for years for a child who walked away from faith',
    sermonId: 'persistent-widow',
    passageIndex: 3,
  },
  {
    text: 'the crooked magistrate caves in so he will not get punched',
    sermonId: 'persistent-widow',
    passageIndex: 1,
  },
  // To till and to keep
  {
    text: 'the whole creation has been groaning as in the pains of childbirth',
    sermonId: 'creation-care',
    passageIndex: 2,
  },
  { text: 'we are tenants and the earth belongs to God', sermonId: 'creation-care', passageIndex: 1 },
  { text: 'letting the fields lie unplanted every seventh year', sermonId: 'creation-care', passageIndex: 3 },
  { text: 'what our congregation is doing to go green', sermonId: 'creation-care', passageIndex: 4 },
  // Angels unawares
  {
    text: 'some people have shown hospitality to angels without knowing it',
    sermonId: 'welcoming-the-stranger',
    passageIndex: 1,
  },
  {
    text: 'Abraham welcomed three visitors under the trees at Mamre',
    sermonId: 'welcoming-the-stranger',
    passageIndex: 0,
  },
  {
    text: 'helping refugee newcomers settle into our parish',
    sermonId: 'welcoming-the-stranger',
    passageIndex: 3,
  },
  {
    text: 'you were foreigners in Egypt, so do not mistreat the immigrant',
    sermonId: 'welcoming-the-stranger',
    passageIndex: 2,
  },
  // The farmer waits
  {
    text: 'see how the farmer waits for the land to yield its valuable crop',
    sermonId: 'patience-of-the-farmer',
    passageIndex: 0,
  },
  {
    text: 'Abraham and Sarah waited twenty-five years for Isaac',
    sermonId: 'patience-of-the-farmer',
    passageIndex: 2,
  },
  {
    text: 'getting irritated at slow websites and red lights',
    sermonId: 'patience-of-the-farmer',
    passageIndex: 1,
  },
  // A towel and a basin
  { text: 'Lord, you shall never wash my feet', sermonId: 'washing-feet', passageIndex: 2 },
  { text: 'take the lowest seat at the wedding banquet', sermonId: 'washing-feet', passageIndex: 3 },
  { text: "the master kneels down to do a slave's chore", sermonId: 'washing-feet', passageIndex: 1 },
  // Be strong and courageous
  { text: 'be strong and courageous, do not be afraid', sermonId: 'courage-joshua', passageIndex: 0 },
  {
    text: 'the river did not part until the priests stepped into the water',
    sermonId: 'courage-joshua',
    passageIndex: 2,
  },
  {
    text: 'Esther risked her life going to the king: if I perish, I perish',
    sermonId: 'courage-joshua',
    passageIndex: 3,
  },
  { text: 'bravery means acting while scared', sermonId: 'courage-joshua', passageIndex: 1 },
  // Only one came back
  { text: 'were not all ten cleansed? where are the other nine?', sermonId: 'ten-lepers', passageIndex: 2 },
  {
    text: 'write down three things you are grateful for each night',
    sermonId: 'ten-lepers',
    passageIndex: 4,
  },
  {
    text: 'only the outsider returned to say thanks after being cured',
    sermonId: 'ten-lepers',
    passageIndex: 1,
  },
  // Unless I see
  { text: 'unless I see the nail marks in his hands', sermonId: 'doubting-thomas', passageIndex: 0 },
  { text: 'honest doubt can end in a deeper faith', sermonId: 'doubting-thomas', passageIndex: 3 },
  {
    text: 'the sceptical apostle was no coward, just a realist',
    sermonId: 'doubting-thomas',
    passageIndex: 1,
  },
  { text: 'the risen Lord shows his injuries as proof', sermonId: 'doubting-thomas', passageIndex: 2 },
  // Who is my neighbour?
  { text: 'and who is my neighbour, the lawyer asked', sermonId: 'good-samaritan', passageIndex: 0 },
  {
    text: 'the excuses we make for walking past people in need',
    sermonId: 'good-samaritan',
    passageIndex: 2,
  },
  {
    text: 'a despised outsider tends the victim and pays for his lodging',
    sermonId: 'good-samaritan',
    passageIndex: 3,
  },
  // The better part
  { text: 'you are worried and upset about many things', sermonId: 'mary-and-martha', passageIndex: 2 },
  {
    text: 'so busy doing things for Jesus that we never spend time with him',
    sermonId: 'mary-and-martha',
    passageIndex: 3,
  },
  {
    text: 'the sister stuck in the kitchen wants the other one to help',
    sermonId: 'mary-and-martha',
    passageIndex: 1,
  },
  // Out of the boat
  {
    text: 'beginning to sink, he cried out, Lord save me',
    sermonId: 'peter-walks-on-water',
    passageIndex: 2,
  },
  {
    text: 'the disciples thought Jesus walking on the lake was a ghost',
    sermonId: 'peter-walks-on-water',
    passageIndex: 1,
  },
  {
    text: 'the only one brave enough to climb out of the fishing vessel',
    sermonId: 'peter-walks-on-water',
    passageIndex: 3,
  },
  // Come down quickly
  {
    text: 'Zacchaeus, come down immediately. I must stay at your house today',
    sermonId: 'zacchaeus',
    passageIndex: 1,
  },
  {
    text: 'the tax collector gives half his possessions to the poor',
    sermonId: 'zacchaeus',
    passageIndex: 2,
  },
  { text: 'being accepted comes before changing your ways', sermonId: 'zacchaeus', passageIndex: 3 },
  // يوسف يغفر لإخوته
  { text: 'أنتم قصدتم لي شراً أما الله فقصد به خيراً', sermonId: 'ar-joseph-forgives', passageIndex: 3 },
  { text: 'يوسف يبكي ويكشف نفسه لإخوته', sermonId: 'ar-joseph-forgives', passageIndex: 2 },
  { text: 'باع الإخوة أخاهم عبداً للتجار', sermonId: 'ar-joseph-forgives', passageIndex: 0 },
  { text: 'Joseph forgives the brothers who sold him', sermonId: 'ar-joseph-forgives', passageIndex: 3 },
  // الخروف الضال
  { text: 'يترك التسعة والتسعين في البرية ويذهب وراء الضال', sermonId: 'ar-lost-sheep', passageIndex: 0 },
  { text: 'الراعي يحمل الخروف على كتفيه فرحاً', sermonId: 'ar-lost-sheep', passageIndex: 2 },
  { text: 'فرح في السماء بخاطئ واحد يتوب', sermonId: 'ar-lost-sheep', passageIndex: 3 },
  { text: 'كيف نبتعد عن الله شيئاً فشيئاً دون أن نشعر', sermonId: 'ar-lost-sheep', passageIndex: 1 },
];
