// Syntax highlighting for the TVMScript-style text format: a small stream tokenizer
// (decorators, keywords, T./I. builtins, strings, numbers, comments).
import { StreamLanguage } from '@codemirror/language';

const keywords = new Set(['def', 'class', 'for', 'in', 'if', 'else', 'elif', 'return', 'with', 'while', 'and', 'or', 'not',
  'True', 'False', 'None', 'range', 'import', 'from', 'as']);

export const tirLanguage = StreamLanguage.define({
  name: 'tir',
  token(stream) {
    if (stream.eatSpace()) return null;
    if (stream.match(/^#.*/)) return 'comment';
    if (stream.match(/^@[\w.]+/)) return 'meta';
    if (stream.match(/^"(?:[^"\\]|\\.)*"?/) || stream.match(/^'(?:[^'\\]|\\.)*'?/)) return 'string';
    if (stream.match(/^-?(?:0x[0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?)/)) return 'number';
    if (stream.match(/^[TI]\.\w+/)) return 'typeName';
    const word = stream.match(/^[A-Za-z_]\w*/);
    if (word) {
      if (keywords.has(word[0])) return 'keyword';
      return stream.peek() === '(' ? 'variableName.function' : 'variableName';
    }
    if (stream.match(/^(?:==|!=|<=|>=|\/\/|\*\*|[-+*/%<>=:,.()[\]{}])/)) return 'operator';
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: '#' } },
});
