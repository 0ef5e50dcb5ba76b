// Text the suite sends where it checks that text comes back as sent.

/**
 * Text that a careless implementation changes (§1: JSON bodies are Unicode text, given back as
 * sent): accents precomposed and combining (e + U+0301, which NFC would fold), CJK, emoji beyond
 * the BMP with a skin tone and a zero-width joiner, right-to-left Hebrew and Arabic, a
 * right-to-left override, and mathematical letters beyond the BMP.
 */
export const HOSTILE_TEXT = 'Ça coûte 5 € — cafe\u0301 会話テスト 🧪👩🏽‍💻 שלום עולם مرحبا \u202Eabc\u202C 𝔘𝔫𝔦𝔠𝔬𝔡𝔢';
