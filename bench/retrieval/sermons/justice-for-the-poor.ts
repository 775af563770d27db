import type { SermonSource } from '../sources';

export const justiceForThePoor = {
  id: 'justice-for-the-poor',
  title: 'Let Justice Roll Down',
  language: 'en',
  passages: [
    `The prophet Amos was a shepherd and a tender of fig trees, not a professional preacher. God sent him to the wealthy northern kingdom, where the rich lay on beds inlaid with ivory while the poor were sold for a pair of sandals. Israel was very religious. The festivals were crowded, the offerings generous, the songs loud. And God said through Amos, "I hate, I despise your religious festivals."`,
    `"Away with the noise of your songs! I will not listen to the music of your harps. But let justice roll on like a river, righteousness like a never-failing stream." God is not impressed by worship that leaves the poor crushed outside the sanctuary door. The prophets insist that how we treat the vulnerable is itself an act of worship, or an act of blasphemy. Songs cannot cover the sound of the oppressed.`,
    `The law of Moses built care for the poor into the economy. When you reap your harvest, do not reap to the very edges of your field or gather the gleanings. Leave them for the poor and the foreigner. That is how Ruth, a widow and an immigrant, found food in the fields of Boaz. Justice in the Bible is not only charity after the fact. It is a system designed so that the weak are not left without bread.`,
    `James writes with fire: "Look! The wages you failed to pay the workers who mowed your fields are crying out against you. The cries of the harvesters have reached the ears of the Lord Almighty." Unpaid wages, unsafe workplaces, rents that swallow half a family's income: these are not merely economic questions. Scripture calls them sins that cry out to heaven, and God hears the cry even when the courts do not.`,
    `What does that mean for us? It means asking where our clothes were made and who picked our coffee. It means paying a fair wage if we employ anyone. It means the food bank, yes, but also speaking to the council about housing, and listening to the people who actually live with poverty. Justice is love with its sleeves rolled up, love that asks why the poor are poor.`,
  ],
} satisfies SermonSource;
