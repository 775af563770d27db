import type { SermonSource } from '../sources';

export const doubtingThomas = {
  id: 'doubting-thomas',
  title: 'Unless I See',
  language: 'en',
  passages: [
    `On the evening of the first Easter, Jesus appeared to the disciples behind locked doors, but Thomas was not with them. When the others told him, "We have seen the Lord!", he said, "Unless I see the nail marks in his hands and put my finger where the nails were, and put my hand into his side, I will not believe." History has nicknamed him Doubting Thomas, which is a little unfair.`,
    `Thomas was the disciple who, when Jesus decided to go back to Judea where people had tried to stone him, said to the others, "Let us also go, that we may die with him." He was not a coward or a cynic. He was a realist who had seen his friend crucified and buried. He did not want to be comforted by a rumour. He wanted the truth, whatever it cost.`,
    `A week later the disciples were in the house again, and Thomas was with them. Though the doors were locked, Jesus came and stood among them and said, "Peace be with you!" Then he said to Thomas, "Put your finger here; see my hands. Reach out your hand and put it into my side. Stop doubting and believe." Jesus did not scold him. He offered his wounds as evidence.`,
    `Thomas answered, "My Lord and my God!" The one who doubted most made the greatest confession of faith in the whole gospel. Honest doubt, brought to Jesus, often ends in deeper faith than easy belief that never asked a question. A father once cried out to Jesus, "I do believe; help my unbelief!" That prayer is enough. Faith and doubt often live in the same heart.`,
    `If you are struggling to believe this morning, you are welcome here. Bring your questions. Read the gospels for yourself, argue with them, talk to a friend who will not be shocked. Jesus said, "Blessed are those who have not seen and yet have believed." He was thinking of us, who were not in that room. Faith is not certainty; it is trust that keeps walking with the questions.`,
  ],
} satisfies SermonSource;
