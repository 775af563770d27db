import type { SermonSource } from '../sources';

export const courageJoshua = {
  id: 'courage-joshua',
  title: 'Be Strong and Courageous',
  language: 'en',
  passages: [
    `Moses was dead. For forty years he had led the people through the wilderness, and now the job fell to Joshua, his assistant. In front of them was the river Jordan in flood, and beyond it a land full of fortified cities. Three times in the first chapter of Joshua God says the same thing: "Be strong and courageous. Do not be afraid; do not be discouraged, for the Lord your God will be with you wherever you go."`,
    `Courage in the Bible is not the absence of fear. God would not need to tell Joshua three times not to be afraid unless Joshua was afraid. Courage is obedience with trembling knees. It is doing the right thing while your hands are shaking. The brave are not those who feel no fear, but those who refuse to let fear make their decisions for them.`,
    `When the priests carrying the ark stepped into the Jordan, the water stopped flowing and piled up in a heap far upstream. But notice the order: the river did not part until their feet touched the water. They had to get their feet wet first. Often God does not show us the way across until we take the first step into the current, while the river is still in flood.`,
    `Centuries later, a young Jewish woman named Esther was queen in Persia when an order went out to destroy her people. To go to the king without being summoned could mean death. Her cousin Mordecai sent word: "Who knows but that you have come to your royal position for such a time as this?" Esther answered, "I will go to the king, even though it is against the law. And if I perish, I perish."`,
    `Where do you need courage this week? Perhaps to tell the truth at work when lying would be easier, to speak up for a colleague who is being bullied, to make the phone call to the doctor you have been avoiding, or to tell a friend about your faith. You will probably be afraid. Go anyway. The same promise given to Joshua is given to you: I will never leave you nor forsake you.`,
  ],
} satisfies SermonSource;
