// Light or dark editors, following the system setting (prefers-color-scheme) as the page's
// CSS does; a change of the setting reconfigures the open editors.
import { EditorView } from '@codemirror/view';
import { HighlightStyle, syntaxHighlighting, defaultHighlightStyle } from '@codemirror/language';
import { tags } from '@lezer/highlight';

const darkQuery = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
export const isDark = () => Boolean(darkQuery && darkQuery.matches);

// Colours chosen for at least 4.5:1 against the dark panel (#1e222a).
const darkHighlight = HighlightStyle.define([
  { tag: tags.keyword, color: '#d7a6ff' },
  { tag: [tags.string, tags.special(tags.string)], color: '#b5e08c' },
  { tag: tags.number, color: '#ffab85' },
  { tag: tags.comment, color: '#9aa3b5', fontStyle: 'italic' },
  { tag: tags.meta, color: '#8fd0ff' },
  { tag: tags.typeName, color: '#8fb4ff' },
  { tag: tags.function(tags.variableName), color: '#ffd479' },
  { tag: [tags.propertyName, tags.bool, tags.null], color: '#8fd0ff' },
]);

const darkTheme = EditorView.theme({
  '&': { color: '#e3e6ec', backgroundColor: '#1e222a' },
  '.cm-content': { caretColor: '#e3e6ec' },
  '.cm-cursor': { borderLeftColor: '#e3e6ec' },
  '.cm-gutters': { backgroundColor: '#191c23', color: '#9aa3b5', borderRight: '1px solid #363c48' },
  '.cm-activeLine': { backgroundColor: '#2a303c80' },
  '&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection': { backgroundColor: '#3a4a70' },
}, { dark: true });

export function themeExtensions() {
  return isDark() ? [darkTheme, syntaxHighlighting(darkHighlight)] : [syntaxHighlighting(defaultHighlightStyle)];
}

export function onThemeChange(f) {
  if (darkQuery) darkQuery.addEventListener('change', f);
}
