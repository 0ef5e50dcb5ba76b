// The widget's styles: constructable stylesheets adopted by its shadow root (D-55), so that a host
// CSP without 'unsafe-inline' allows them and the host page's styles never reach inside.

export const BASE_CSS = `
:host { all: initial; position: fixed; right: 16px; bottom: 16px; z-index: 2147483000;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; color-scheme: light; }
:host([data-inline]) { position: static; display: block; height: 100%; }
*, *::before, *::after { box-sizing: border-box; }
[hidden] { display: none !important; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
button, input, select, textarea { font: inherit; color: inherit; }
button { cursor: pointer; }
:focus-visible { outline: 3px solid var(--pw-focus); outline-offset: 2px; }
.launcher { display: flex; align-items: center; gap: 8px; border: 0; border-radius: 28px; padding: 12px 18px;
  background: var(--pw-primary); color: var(--pw-on-primary); box-shadow: 0 4px 16px rgba(0,0,0,.2); font-weight: 600; }
.panel, .launcher { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; letter-spacing: normal; text-transform: none; }
.panel { color: #1f2328; position: absolute; right: 0; bottom: 64px; width: min(380px, calc(100vw - 32px)); height: min(600px, calc(100vh - 96px));
  display: flex; flex-direction: column; background: #fff; border: 1px solid #d0d7de; border-radius: 12px;
  box-shadow: 0 8px 32px rgba(0,0,0,.25); overflow: hidden; }
:host([data-inline]) .panel { position: static; width: 100%; height: 100%; box-shadow: none; }
header { display: flex; align-items: center; gap: 8px; padding: 10px 12px; background: var(--pw-primary); color: var(--pw-on-primary); }
header h2 { flex: 1; margin: 0; font-size: 16px; font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
header button { border: 0; background: transparent; color: inherit; padding: 4px 10px; border-radius: 6px; font-size: 14px; min-height: 32px; }
header button:hover { background: rgba(127,127,127,.25); }
.log { flex: 1; overflow-y: auto; padding: 12px; display: flex; flex-direction: column; gap: 8px; background: var(--pw-secondary); }
.msg { max-width: 85%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.msg.user { align-self: flex-end; background: var(--pw-primary); color: var(--pw-on-primary); border-bottom-right-radius: 4px; }
.msg.agent { align-self: flex-start; background: #fff; color: #1f2328; border: 1px solid #d0d7de; border-bottom-left-radius: 4px; }
.msg.agent.failed { border-color: #cf222e; }
.msg .who { display: block; font-size: 12px; font-weight: 600; color: #57606a; }
.msg.user .who { color: inherit; }
.msg .error { display: block; margin-top: 4px; color: #a40e26; font-size: 14px; }
.msg .retry { margin-top: 6px; border: 1px solid #a40e26; background: #fff; color: #a40e26; border-radius: 6px; padding: 4px 10px; font-size: 14px; min-height: 32px; }
.status { align-self: flex-start; font-size: 13px; color: #57606a; font-style: italic; }
.empty { color: #57606a; margin: auto; text-align: center; padding: 12px; }
.gen-form { align-self: stretch; background: #fff; border: 1px solid #d0d7de; border-radius: 10px; padding: 12px; display: flex; flex-direction: column; gap: 8px; }
.gen-form h3 { margin: 0; font-size: 16px; }
.gen-desc, .gen-note { margin: 0; font-size: 13px; color: #57606a; }
.gen-field { display: flex; flex-direction: column; gap: 2px; }
.gen-field.inline { flex-direction: row; align-items: center; gap: 8px; }
.gen-field label { font-size: 14px; font-weight: 600; }
.gen-field input:not([type=checkbox]), .gen-field textarea, .gen-field select { width: 100%; padding: 6px 8px; border: 1px solid #6e7781; border-radius: 6px; background: #fff; min-height: 36px; }
.gen-field input[type=checkbox] { width: 20px; height: 20px; }
.req { color: #a40e26; }
button.primary { align-self: flex-start; border: 0; border-radius: 6px; padding: 8px 14px; background: var(--pw-primary); color: var(--pw-on-primary); font-weight: 600; min-height: 36px; }
button:disabled { opacity: .6; cursor: default; }
.composer { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #d0d7de; background: #fff; }
.composer textarea { flex: 1; resize: none; min-height: 40px; max-height: 120px; padding: 8px; border: 1px solid #6e7781; border-radius: 8px; }
`;

const HEX = /^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i;

/** The app's colors (§2.8) as custom properties; anything but a hex color falls back (no CSS injection). */
export function themeCss(primary: string, secondary: string): string {
  const p = HEX.test(primary) ? primary : '#1f6feb';
  const s = HEX.test(secondary) ? secondary : '#f6f8fa';
  // WCAG 2.1 AA (1.4.3): text on the primary color is white or near-black, whichever contrasts more.
  const onPrimary = contrast(p, '#ffffff') >= contrast(p, '#1f2328') ? '#ffffff' : '#1f2328';
  // The secondary color is a background for white bubbles and grey notes: too dark a one is lightened.
  const back = contrast(s, '#57606a') >= 4.5 ? s : '#f6f8fa';
  return `:host { --pw-primary: ${p}; --pw-on-primary: ${onPrimary}; --pw-secondary: ${back}; --pw-focus: ${contrast(p, '#ffffff') >= 3 ? p : '#0969da'}; }`;
}

function luminance(hex: string): number {
  const h = hex.length === 4 ? hex.replace(/^#(.)(.)(.)$/, '#$1$1$2$2$3$3') : hex;
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(h.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

export function contrast(a: string, b: string): number {
  const [x, y] = [luminance(a), luminance(b)].sort((m, n) => n - m);
  return (x! + 0.05) / (y! + 0.05);
}

export function sheet(css: string): CSSStyleSheet {
  const s = new CSSStyleSheet();
  s.replaceSync(css);
  return s;
}
