import type { SermonSource } from '../sources';

export const forgivingSeventyTimesSeven = {
  id: 'forgiving-seventy-times-seven',
  title: 'Seventy Times Seven',
  language: 'en',
  passages: [
    `Peter came to Jesus with a question that sounds generous until you hear the number in it. "Lord, how many times shall I forgive my brother when he sins against me? Up to seven times?" Peter thought seven was a lavish figure; the teachers of his day said three times was enough. Jesus answered, "Not seven times, but seventy times seven." He was not handing Peter a larger ledger to keep. He was telling him to throw the ledger away, because love that counts offences is still keeping score.`,
    `Then Jesus told a story about a servant who owed his king ten thousand talents, a debt no one could repay in a hundred lifetimes. The servant fell on his knees and begged, and the king cancelled the whole debt. That same servant walked out, found a fellow servant who owed him a hundred denarii, seized him by the throat and had him thrown into prison. The story asks us which servant we are, and the honest answer is that we have been forgiven far more than we will ever be asked to forgive.`,
    `Let me say plainly what forgiveness is not. Forgiving is not forgetting. It is not pretending the wound was small, or telling a victim to go back into a house where they will be hurt again. God does not ask the abused to return to the abuser. Forgiveness and trust are different things: forgiveness can be given in a moment, while trust is rebuilt slowly, if it can be rebuilt at all, by the one who broke it.`,
    `So what is forgiveness? It is a decision to release the debt, to stop demanding that the other person pay back what they took. You hand the account over to God, who judges justly. And here is the surprise: the person most set free is usually the one who forgives. Resentment is like drinking poison and waiting for the other person to fall ill. Bitterness keeps the one who hurt you living rent-free in your mind.`,
    `Some of you are thinking of one name right now. Perhaps it is a parent, a former husband, a business partner, a sister who has not called in years. You do not have to feel warm toward them this morning. Start smaller. Pray for them by name, even through clenched teeth. Ask God to do in you what you cannot do yourself. Forgiveness is often a road rather than a single step, and every time the old anger rises, you choose again to let it go.`,
  ],
} satisfies SermonSource;
