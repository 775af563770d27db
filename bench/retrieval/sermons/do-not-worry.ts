import type { SermonSource } from '../sources';

export const doNotWorry = {
  id: 'do-not-worry',
  title: 'Look at the Birds',
  language: 'en',
  passages: [
    `Jesus said, "Do not worry about your life, what you will eat or drink, or about your body, what you will wear. Is not life more than food, and the body more than clothes?" He was not speaking to wealthy people with full pantries. He was speaking to day labourers who did not know whether there would be work tomorrow. Their anxiety was reasonable. That is exactly why his words are so striking.`,
    `"Look at the birds of the air," he said. "They do not sow or reap or store away in barns, and yet your heavenly Father feeds them. Are you not much more valuable than they?" Sparrows are not lazy; they work hard all day long. But they do not lie awake rehearsing disasters that have not happened. Jesus invites us to watch the birds outside the window and learn from them how to trust.`,
    `"Which of you by worrying can add a single hour to your life?" Worry promises control and delivers none. Doctors tell us that chronic anxiety shortens lives rather than lengthening them. Worry spends tomorrow's strength today and borrows trouble at a terrible rate of interest. It never paid a single bill or healed a single illness. It only steals the peace that God meant us to have in this hour.`,
    `"And why do you worry about clothes? See how the lilies of the field grow. They do not labour or spin. Yet not even Solomon in all his splendour was dressed like one of these." If God clothes the grass of the field, which is here today and tomorrow is thrown into the fire, will he not much more clothe you, you of little faith? The wildflowers by the motorway preach a sermon every spring.`,
    `"But seek first his kingdom and his righteousness, and all these things will be given to you as well. Therefore do not worry about tomorrow, for tomorrow will worry about itself. Each day has enough trouble of its own." Jesus does not tell us to stop planning. He tells us to put first things first, to live one day at a time, and to leave tomorrow in hands that are bigger than ours.`,
  ],
} satisfies SermonSource;
