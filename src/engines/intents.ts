// What a message asks for, recognised by intent rather than by sentence, in English and French: the
// embedded engine answers these itself instead of searching the knowledge base for them (a request
// to write a welcome line is not a question about refunds). Anything else is left to the knowledge
// base or the plain answer.

export type Lang = 'en' | 'fr';

export type Intent =
  | { kind: 'greeting' | 'thanks' | 'farewell' | 'capabilities' | 'identity'; lang: Lang }
  | { kind: 'write'; lang: Lang; piece: Piece; theme: Theme; subject: string[] };

/** What kind of text a writing request wants. */
export type Piece = 'line' | 'message' | 'email' | 'title';
/** What the text is for, when that is one of the themes the engine has words for. */
export type Theme = 'welcome' | 'thanks' | 'apology' | 'announcement' | 'reminder' | 'other';

/** Lower case, accents and apostrophes folded, words separated by single spaces. */
function normalise(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[’'`]/g, ' ')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

// Each pattern runs on normalise()d text, so it is written without accents or punctuation.
const GREETING =
  /^(hi|hello|hey|hiya|howdy|good (morning|afternoon|evening)|bonjour|bonsoir|salut|allo|coucou)( there| everyone| all| tout le monde)?( \p{L}+)?$/u;
const THANKS =
  /^(ok|okay|great|perfect|super|parfait|genial)( (thanks?( you)?|merci))?$|^((ok|okay|great|perfect|parfait) )?((many )?thanks?( you)?( (so|very) much| a lot| again)?|thx|ty|cheers|merci( beaucoup| bien| encore)?|great thanks?|perfect thanks?)( \p{L}+)?$/u;
const FAREWELL =
  /^(bye|goodbye|good bye|bye bye|see (you|ya)( later| soon)?|farewell|au revoir|a (plus|bientot|la prochaine)|bonne (journee|soiree))( \p{L}+)?$/u;
const CAPABILITIES_EN =
  /\b(what (can|could|do) (you|u) (do|help( me)? with|offer)|what are (you|u) (able|capable)|how (can|could|do) (you|u) help|what do (you|u) (know|do)|what can i ask( you)?|what kind of (things|questions|help)|what (are|is) (you|u) good (at|for)|help me get started|your (capabilities|skills|features))\b/u;
const CAPABILITIES_FR =
  /\b((que|qu est ce que) (tu peux|vous pouvez|peux tu|pouvez vous|sais tu|savez vous) faire|(comment|en quoi) (peux tu|pouvez vous|tu peux|vous pouvez) m aider|a quoi (sers tu|servez vous)|tu sers a quoi|quelles sont tes (capacites|fonctions))\b/u;
const IDENTITY =
  /^(who|what) (are|r) (you|u)( exactly)?$|^(qui|que) (es tu|etes vous)$|^t es qui$|^(tell me|parle moi) about (yourself|toi)$/u;

// A writing request is an imperative ("Write …", "Could you draft …", "Écris …"), not a question that
// happens to contain "make" or "message" ("How do I make a message stream?" goes to the knowledge base).
const POLITE =
  '(please |pls |can you |could you |would you |will you |can u |i need |i d like |i would like |help me |peux tu |pouvez vous |pourrais tu |pourriez vous |tu peux |vous pouvez |j ai besoin d |merci de |svp )*';
const WRITE_EN = new RegExp(`^${POLITE}(write|draft|compose|craft|come up with|suggest|propose|give me|create|make)\\b`, 'u');
const WRITE_FR = new RegExp(
  `^${POLITE}(ecris|ecrivez|ecrire|redige|redigez|rediger|compose|composez|propose|proposez|proposer|donne moi|donnez moi|suggere|suggerez|trouve moi)\\b`,
  'u',
);
const PIECES: Array<[Piece, RegExp]> = [
  ['email', /\b(e ?mail|email|courriel|letter|lettre)\b/u],
  ['title', /\b(title|headline|subject line|titre|objet)\b/u],
  ['message', /\b(message|note|paragraph|paragraphe|text|texte|post|tweet|announcement|annonce|intro|introduction)\b/u],
  ['line', /\b(line|sentence|tagline|slogan|greeting|phrase|ligne|mot|formule)\b/u],
];
const THEMES: Array<[Theme, RegExp]> = [
  [
    'welcome',
    /\b(welcome|welcoming|onboard\w*|new (users?|customers?|members?|clients?)|bienvenue|accueil\w*|nouveaux? (utilisateurs?|clients?|membres?))\b/u,
  ],
  ['thanks', /\b(thank\w*|gratitude|remercie\w*|merci)\b/u],
  ['apology', /\b(sorry|apolog\w*|excuse\w*|desole\w*)\b/u],
  ['announcement', /\b(announc\w*|launch\w*|release|new feature|annonc\w*|lancement|nouveaute)\b/u],
  ['reminder', /\b(remind\w*|reminder|rappel\w*|deadline|echeance)\b/u],
];
const FRENCH_WORDS =
  /\b(bonjour|bonsoir|salut|merci|au revoir|que|qu|quoi|tu|vous|peux|pouvez|ecris|redige|une|des|pour|les|nos|nouveaux|phrase|bienvenue|quel|quelle|comment|je|moi|est)\b/gu;
const ENGLISH_WORDS = /\b(hello|hi|thanks|what|who|can|you|write|the|for|new|a|an|our|my|me|is|are|how|please)\b/gu;
const SUBJECT_FILLER = new Set(
  (
    'write draft compose craft come up with suggest propose give me create make a an the some one short quick brief little nice good friendly ' +
    'for to of about our my your their please can you could would line sentence message note email e mail letter title headline text paragraph ' +
    'ecris ecrivez ecrire redige redigez rediger composez donne donnez moi une un des les pour nos notre mes mon de du la le petite petit courte court ' +
    'phrase ligne mot texte courriel titre sil plait svp tagline slogan headline greeting intro introduction post tweet formule'
  ).split(' '),
);

/** The language of a short message: French when French words outnumber English ones. */
export function language(norm: string): Lang {
  const fr = norm.match(FRENCH_WORDS)?.length ?? 0;
  const en = norm.match(ENGLISH_WORDS)?.length ?? 0;
  return fr > en ? 'fr' : 'en';
}

/** The language of any text (a question, a search query). */
export const languageOf = (text: string): Lang => language(normalise(text));

export function recognise(text: string): Intent | undefined {
  const norm = normalise(text);
  if (!norm) return undefined;
  const lang = language(norm);
  if (GREETING.test(norm)) return { kind: 'greeting', lang };
  if (THANKS.test(norm)) return { kind: 'thanks', lang };
  if (FAREWELL.test(norm)) return { kind: 'farewell', lang };
  if (IDENTITY.test(norm)) return { kind: 'identity', lang };
  if (CAPABILITIES_EN.test(norm)) return { kind: 'capabilities', lang: 'en' };
  if (CAPABILITIES_FR.test(norm)) return { kind: 'capabilities', lang: 'fr' };
  const [fr, en] = [WRITE_FR.test(norm), WRITE_EN.test(norm)];
  // "compose" and "propose" are both languages' verbs: then the rest of the sentence decides.
  const asks: Lang | undefined = fr && en ? lang : fr ? 'fr' : en ? 'en' : undefined;
  const piece = PIECES.find(([, re]) => re.test(norm))?.[0];
  if (asks && piece) {
    const theme = THEMES.find(([, re]) => re.test(norm))?.[0] ?? 'other';
    const subject = norm
      .split(' ')
      .filter((w) => w.length > 2 && !SUBJECT_FILLER.has(w))
      .slice(0, 4);
    return { kind: 'write', lang: asks, piece, theme, subject };
  }
  return undefined;
}

export interface Abilities {
  agentName: string;
  /** The caller's name from the metadata (as data), for a greeting. */
  userName?: string;
  knowledgeBase: boolean;
  forms: string[];
  conversation: boolean;
}

/** The engine's own answer to an intent; fixed templates, so the same message gets the same answer. */
export function answer(intent: Intent, a: Abilities): string {
  const fr = intent.lang === 'fr';
  switch (intent.kind) {
    case 'greeting':
      return fr
        ? `Bonjour${a.userName ? ` ${a.userName}` : ''} ! Je suis ${a.agentName}. ${a.knowledgeBase ? 'Posez-moi une question sur les sujets que je connais, ou dites-moi ce dont vous avez besoin.' : 'Que puis-je faire pour vous ?'}`
        : `Hello${a.userName ? ` ${a.userName}` : ''}! I'm ${a.agentName}. ${a.knowledgeBase ? 'Ask me anything about the topics I know, or tell me what you need.' : 'What can I do for you?'}`;
    case 'thanks':
      return fr ? 'Avec plaisir ! Puis-je vous aider pour autre chose ?' : "You're welcome! Is there anything else I can help with?";
    case 'farewell':
      return fr ? 'Au revoir, et bonne journée !' : 'Goodbye, and have a good day!';
    case 'identity':
      return fr
        ? `Je suis ${a.agentName}, un assistant qui fonctionne sur le moteur embarqué de Parley, hors ligne et déterministe.`
        : `I'm ${a.agentName}, an assistant running on Parley's embedded engine: offline and deterministic.`;
    case 'capabilities':
      return capabilities(a, fr);
    case 'write':
      return writing(intent, fr);
  }
}

function capabilities(a: Abilities, fr: boolean): string {
  const can: string[] = [];
  if (a.knowledgeBase)
    can.push(fr ? 'répondre à vos questions à partir de ma base de connaissances' : 'answer questions from my knowledge base');
  if (a.forms.length) can.push(fr ? `vous présenter un formulaire (${a.forms.join(', ')})` : `show you a form (${a.forms.join(', ')})`);
  can.push(fr ? 'écrire de courts textes, comme une phrase de bienvenue' : 'write short texts, such as a welcome line');
  if (a.conversation)
    can.push(
      fr ? 'me souvenir de ce que vous avez dit plus tôt dans la conversation' : 'remember what you said earlier in this conversation',
    );
  const list = can.length > 1 ? `${can.slice(0, -1).join(', ')}${fr ? ' et ' : ' and '}${can.at(-1)}` : can[0]!;
  return fr
    ? `Je suis ${a.agentName}. Je peux ${list}. Je fonctionne sur le moteur embarqué de Parley, hors ligne ; pour les réponses d'un vrai modèle de langage, démarrez Parley avec PARLEY_MODEL=ollama:<modèle>.`
    : `I'm ${a.agentName}. I can ${list}. I run on Parley's embedded offline engine; for answers from a real language model, start Parley with PARLEY_MODEL=ollama:<model>.`;
}

const LINES: Record<Theme, Record<Lang, string>> = {
  welcome: {
    en: 'Welcome aboard! We’re glad you’re here: explore at your own pace, and ask us anything along the way.',
    fr: 'Bienvenue parmi nous ! Nous sommes ravis de vous accueillir : explorez à votre rythme et posez-nous toutes vos questions.',
  },
  thanks: {
    en: 'Thank you for being with us: your trust means a lot, and we’re here whenever you need us.',
    fr: 'Merci de votre confiance : elle compte beaucoup pour nous, et nous restons à votre écoute.',
  },
  apology: {
    en: 'We’re sorry for the trouble: we’re on it, and we’ll keep you posted until it’s fixed.',
    fr: 'Toutes nos excuses pour ce désagrément : nous nous en occupons et vous tiendrons informé jusqu’à sa résolution.',
  },
  announcement: {
    en: 'Something new is here: take a look, and tell us what you think.',
    fr: 'Du nouveau vous attend : découvrez-le et dites-nous ce que vous en pensez.',
  },
  reminder: {
    en: 'A friendly reminder: the date is coming up soon, so now is a good time to get ready.',
    fr: 'Petit rappel amical : l’échéance approche, c’est le bon moment pour vous préparer.',
  },
  other: { en: '', fr: '' },
};
const TITLES: Record<Theme, Record<Lang, string>> = {
  welcome: { en: 'Welcome aboard', fr: 'Bienvenue parmi nous' },
  thanks: { en: 'Thank you', fr: 'Merci' },
  apology: { en: 'Our apologies', fr: 'Toutes nos excuses' },
  announcement: { en: 'Something new is here', fr: 'Du nouveau' },
  reminder: { en: 'A friendly reminder', fr: 'Petit rappel' },
  other: { en: '', fr: '' },
};

function writing(intent: Extract<Intent, { kind: 'write' }>, fr: boolean): string {
  const lang = intent.lang;
  const topic = intent.subject.join(' ');
  if (intent.piece === 'title') {
    const title = TITLES[intent.theme][lang] || capitalise(topic || (fr ? 'Nouveau départ' : 'A fresh start'));
    return fr ? `Voici un titre : « ${title} ».` : `Here is a title: “${title}”.`;
  }
  const line =
    LINES[intent.theme][lang] ||
    (fr
      ? `${capitalise(topic || 'notre service')} : simple, clair et pensé pour vous.`
      : `${capitalise(topic || 'our service')}: simple, clear and made for you.`);
  if (intent.piece === 'email') {
    return fr
      ? `Voici un court message :\n\nBonjour,\n\n${line}\n\nÀ bientôt,\nL’équipe`
      : `Here is a short email:\n\nHello,\n\n${line}\n\nSee you soon,\nThe team`;
  }
  return fr ? `Voici une proposition : « ${line} »` : `Here is a suggestion: “${line}”`;
}

function capitalise(s: string): string {
  return s ? s[0]!.toUpperCase() + s.slice(1) : s;
}
