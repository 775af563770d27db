import type { SermonSource } from '../sources';
import { arJosephForgives } from './ar-joseph-forgives';
import { arLostSheep } from './ar-lost-sheep';
import { castYourCares } from './cast-your-cares';
import { courageJoshua } from './courage-joshua';
import { creationCare } from './creation-care';
import { doNotWorry } from './do-not-worry';
import { doubtingThomas } from './doubting-thomas';
import { elderBrother } from './elder-brother';
import { forgivingSeventyTimesSeven } from './forgiving-seventy-times-seven';
import { goodSamaritan } from './good-samaritan';
import { griefLament } from './grief-lament';
import { justiceForThePoor } from './justice-for-the-poor';
import { lordsPrayer } from './lords-prayer';
import { maryAndMartha } from './mary-and-martha';
import { patienceOfTheFarmer } from './patience-of-the-farmer';
import { persistentWidow } from './persistent-widow';
import { peterWalksOnWater } from './peter-walks-on-water';
import { prodigalYoungerSon } from './prodigal-younger-son';
import { sabbathRest } from './sabbath-rest';
import { tenLepers } from './ten-lepers';
import { washingFeet } from './washing-feet';
import { welcomingTheStranger } from './welcoming-the-stranger';
import { widowsMite } from './widows-mite';
import { zacchaeus } from './zacchaeus';

/** Every sermon of the labelled set, one file each; adding one is a file and a line here. */
export const SERMONS: readonly SermonSource[] = [
  forgivingSeventyTimesSeven,
  prodigalYoungerSon,
  elderBrother,
  doNotWorry,
  castYourCares,
  widowsMite,
  sabbathRest,
  griefLament,
  justiceForThePoor,
  lordsPrayer,
  persistentWidow,
  creationCare,
  welcomingTheStranger,
  patienceOfTheFarmer,
  washingFeet,
  courageJoshua,
  tenLepers,
  doubtingThomas,
  goodSamaritan,
  maryAndMartha,
  peterWalksOnWater,
  zacchaeus,
  arJosephForgives,
  arLostSheep,
];
