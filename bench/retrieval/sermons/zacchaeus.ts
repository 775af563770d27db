import type { SermonSource } from '../sources';

export const zacchaeus = {
  id: 'zacchaeus',
  title: 'Come Down Quickly',
  language: 'en',
  passages: [
    `Jesus entered Jericho and was passing through. A man was there by the name of Zacchaeus; he was a chief tax collector and was wealthy. Tax collectors worked for Rome and made their fortunes by charging more than was owed. His neighbours saw him as a traitor and a thief. He wanted to see who Jesus was, but because he was short he could not see over the crowd.`,
    `So he ran ahead and climbed a sycamore-fig tree to see him, since Jesus was coming that way. Picture a rich, important man hitching up his robes and scrambling into a tree like a schoolboy. When Jesus reached the spot, he looked up and said to him, "Zacchaeus, come down immediately. I must stay at your house today." Of all the houses in Jericho, Jesus chose the one nobody else would enter.`,
    `All the people saw this and began to mutter, "He has gone to be the guest of a sinner." But Zacchaeus stood up and said to the Lord, "Look, Lord! Here and now I give half of my possessions to the poor, and if I have cheated anybody out of anything, I will pay back four times the amount." No one had told him to do it. Grace had reached his wallet.`,
    `Notice the order. Jesus did not say, "Repay everyone, and then I will come to your house." He welcomed Zacchaeus first, and the change followed. Repentance is not the price we pay to be accepted; it is the response of someone who has been accepted. When we are loved before we deserve it, we start to become generous and honest without being forced.`,
    `Jesus said to him, "Today salvation has come to this house, because this man, too, is a son of Abraham. For the Son of Man came to seek and to save the lost." Is there someone in your life everyone has written off, someone the town mutters about? Jesus stops under their tree. And perhaps you are the one up the tree today, curious but hiding. He knows your name. Come down.`,
  ],
} satisfies SermonSource;
