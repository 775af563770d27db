import type { SermonSource } from '../sources';

export const griefLament = {
  id: 'grief-lament',
  title: 'Jesus Wept',
  language: 'en',
  passages: [
    `The shortest verse in the Bible is only two words long: Jesus wept. He stood outside the tomb of his friend Lazarus, surrounded by mourners, and he cried. He knew that in a few minutes he would call Lazarus out of the grave, and still he wept. That tells us something precious. Grief is not a lack of faith. Tears at a graveside are not unbelief. The Son of God himself shed them.`,
    `Martha met him on the road and said, "Lord, if you had been here, my brother would not have died." Her sister Mary said exactly the same words. They were not polite. They were raw and accusing, and Jesus did not rebuke either of them. If you are angry with God because someone you love has died, you are in good company. Bring the anger to him. He can bear it.`,
    `The psalms are full of lament. "How long, O Lord? Will you forget me forever?" "My tears have been my food day and night." About a third of the psalms are complaints, cries of pain addressed directly to God. Israel's hymn book gives us permission to grieve out loud. Lament is not the opposite of faith; it is faith that refuses to stop talking to God even when he seems silent.`,
    `When Job lost his children, his health and his wealth, his three friends came and sat with him on the ground for seven days and seven nights, and no one said a word, for they saw how great his suffering was. That week was the best thing they did. It was only when they opened their mouths and started explaining his suffering that they went wrong. Often the kindest gift to the bereaved is presence, not explanations.`,
    `So if you are grieving this morning, you do not need to hurry. There is no timetable for mourning, and the second year can be harder than the first. And to the rest of us: keep showing up. Bring the casserole, yes, but also remember the anniversary, say the name of the one who died, sit in the silence. We grieve, as Paul says, but not as those who have no hope.`,
  ],
} satisfies SermonSource;
