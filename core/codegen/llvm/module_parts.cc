#include "codegen/llvm/module_parts.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <set>
#include <string_view>

namespace mtir {
namespace {

// A callee of at most this many instructions (before optimization) stays with its
// callers: the O2 inliner takes callees of about 45 instructions after simplification
// (threshold 225 at 5 per instruction), and simplification shrinks our IR far less than
// twentyfold. VWW's AOT main inlines its average pooling (78 lines of IR).
constexpr int kInlineCandidateInstructions = 1000;
// 2 parts from this many instructions, 4 from twice as many (a power of two, so that
// two or four cores share the parts evenly): VWW's 49k are 4 parts, IC's 19k 2, KWS's 11k 1.
constexpr int kInstructionsForTwoParts = 12000;

// A function or global variable of the module text.
struct Symbol {
  std::string name;
  bool function = false;
  bool local = false;       // internal or private: only its own part can refer to it
  bool inlinable = false;   // small, or marked for inlining
  std::string declaration;  // a function's define line as a declare line
  int instructions = 0;
  std::vector<std::string> refs;  // the @names its text mentions
};

// The text as chunks in order: a symbol's text, or lines every part shares (symbol -1).
struct Chunk {
  size_t begin = 0, end = 0;
  int symbol = -1;
};

struct Layout {
  std::vector<Symbol> symbols;
  std::vector<Chunk> chunks;
  bool splittable = true;
};

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' || c == '-';
}

// The @names in `text`; a quoted name (@"...") makes the module unsplittable.
void collect_refs(std::string_view text, Symbol* s, bool* splittable) {
  for (size_t at = text.find('@'); at != std::string_view::npos; at = text.find('@', at + 1)) {
    if (at + 1 < text.size() && text[at + 1] == '"') *splittable = false;
    size_t end = at + 1;
    while (end < text.size() && is_name_char(text[end])) ++end;
    if (end > at + 1) s->refs.emplace_back(text.substr(at + 1, end - at - 1));
  }
}

// `define [linkage] <type> @name(<params>) <attributes> {`
Symbol function_header(std::string_view line, bool* splittable) {
  Symbol s;
  s.function = true;
  const size_t at = line.find('@');
  const size_t paren = line.find('(', at);
  const size_t brace = line.rfind('{');
  if (at == std::string_view::npos || paren == std::string_view::npos || brace == std::string_view::npos ||
      line[at + 1] == '"') {
    *splittable = false;
    return s;
  }
  s.name = std::string(line.substr(at + 1, paren - at - 1));
  const std::string_view linkage = line.substr(0, at);
  s.local = linkage.find(" internal ") != std::string_view::npos || linkage.find(" private ") != std::string_view::npos;
  s.inlinable = line.find("alwaysinline") != std::string_view::npos || line.find("inlinehint") != std::string_view::npos;
  std::string_view rest = line.substr(7, brace - 7);  // after "define "
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  s.declaration = "declare " + std::string(rest) + "\n";
  return s;
}

// `@name = private|internal ...` (the emitter's string constants); other variables
// would need a declaration in the parts that do not define them: unsplittable.
Symbol global_line(std::string_view line, bool* splittable) {
  Symbol s;
  const size_t eq = line.find(" = ");
  if (eq == std::string_view::npos || line[1] == '"') {
    *splittable = false;
    return s;
  }
  s.name = std::string(line.substr(1, eq - 1));
  const std::string_view rest = line.substr(eq + 3);
  s.local = rest.rfind("private ", 0) == 0 || rest.rfind("internal ", 0) == 0;
  if (!s.local) *splittable = false;
  collect_refs(rest, &s, splittable);
  return s;
}

Layout read_layout(const std::string& ir) {
  Layout l;
  int open = -1;  // the function being read
  for (size_t begin = 0; begin < ir.size();) {
    size_t eol = ir.find('\n', begin);
    const size_t end = eol == std::string::npos ? ir.size() : eol + 1;
    const std::string_view line(ir.data() + begin, (eol == std::string::npos ? ir.size() : eol) - begin);
    if (open >= 0) {
      Symbol& f = l.symbols[static_cast<size_t>(open)];
      l.chunks.back().end = end;
      if (line == "}") {
        open = -1;
      } else {
        if (line.rfind("  ", 0) == 0) ++f.instructions;
        collect_refs(line, &f, &l.splittable);
      }
    } else if (line.rfind("define ", 0) == 0 || line.rfind("@", 0) == 0) {
      const bool function = line[0] == 'd';
      l.symbols.push_back(function ? function_header(line, &l.splittable) : global_line(line, &l.splittable));
      l.chunks.push_back({begin, end, static_cast<int>(l.symbols.size() - 1)});
      if (function) open = static_cast<int>(l.symbols.size() - 1);
    } else if (!l.chunks.empty() && l.chunks.back().symbol < 0) {
      l.chunks.back().end = end;
    } else {
      l.chunks.push_back({begin, end, -1});
    }
    begin = end;
  }
  if (open >= 0) l.splittable = false;  // a function without its closing line
  for (Symbol& s : l.symbols)
    if (s.function && s.instructions <= kInlineCandidateInstructions) s.inlinable = true;
  return l;
}

// Union-find over symbol indices: a group goes to one part whole.
struct Groups {
  std::vector<size_t> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t i) { return parent[i] == i ? i : parent[i] = find(parent[i]); }
  void join(size_t a, size_t b) {
    a = find(a), b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the root is the earliest symbol
  }
};

// Each symbol's group: joined with the local symbols it refers to and with the
// functions it refers to that the inliner could take.
std::vector<size_t> group_of_symbols(const Layout& l) {
  std::map<std::string_view, size_t> index;
  for (size_t i = 0; i < l.symbols.size(); ++i) index.emplace(l.symbols[i].name, i);
  Groups groups(l.symbols.size());
  for (size_t i = 0; i < l.symbols.size(); ++i)
    for (const std::string& r : l.symbols[i].refs) {
      auto it = index.find(r);
      if (it == index.end() || it->second == i) continue;
      const Symbol& target = l.symbols[it->second];
      if (target.local || (target.inlinable && l.symbols[i].function)) groups.join(i, it->second);
    }
  std::vector<size_t> out(l.symbols.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = groups.find(i);
  return out;
}

// Groups (by root) onto `parts` parts, largest first onto the lightest (ties: the
// earlier group, the lower part); then the parts in order of their first group. The
// part of each symbol.
std::vector<int> balance(const Layout& l, const std::vector<size_t>& group, int parts) {
  std::vector<long> weight(l.symbols.size(), 0);
  for (size_t i = 0; i < l.symbols.size(); ++i) weight[group[i]] += l.symbols[i].instructions;
  std::vector<size_t> roots;
  for (size_t i = 0; i < l.symbols.size(); ++i)
    if (group[i] == i) roots.push_back(i);
  std::stable_sort(roots.begin(), roots.end(), [&](size_t a, size_t b) { return weight[a] > weight[b]; });
  std::vector<long> load(static_cast<size_t>(parts), 0);
  std::vector<size_t> part_of_root(l.symbols.size(), 0);
  std::vector<size_t> first(static_cast<size_t>(parts), l.symbols.size());
  for (size_t r : roots) {
    const size_t p = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    part_of_root[r] = p;
    load[p] += weight[r];
    first[p] = std::min(first[p], r);
  }
  std::vector<size_t> order(static_cast<size_t>(parts));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
  std::vector<int> rank(static_cast<size_t>(parts));
  for (size_t k = 0; k < order.size(); ++k) rank[order[k]] = static_cast<int>(k);
  std::vector<int> out(l.symbols.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = rank[part_of_root[group[i]]];
  return out;
}

LlvmModulePart assemble(const std::string& ir, const Layout& l, const std::vector<int>& part_of, int part) {
  LlvmModulePart out;
  for (const Chunk& c : l.chunks) {
    const Symbol* s = c.symbol < 0 ? nullptr : &l.symbols[static_cast<size_t>(c.symbol)];
    if (!s || part_of[static_cast<size_t>(c.symbol)] == part) {
      out.text.append(ir, c.begin, c.end - c.begin);
      if (s && s->function) out.functions += 1, out.instructions += s->instructions;
    } else if (s->function && !s->local) {
      out.text += s->declaration;  // defined in another part
    }
  }
  return out;
}

}  // namespace

std::vector<LlvmModulePart> split_llvm_module(const std::string& ir, int parts) {
  const Layout l = read_layout(ir);
  if (!l.splittable) return {};
  if (parts <= 0) {
    int instructions = 0;
    for (const Symbol& s : l.symbols) instructions += s.instructions;
    parts = instructions >= 2 * kInstructionsForTwoParts ? kMaxLlvmModuleParts
            : instructions >= kInstructionsForTwoParts   ? 2
                                                         : 1;
  }
  const std::vector<size_t> group = group_of_symbols(l);
  std::set<size_t> groups_with_functions;
  for (size_t i = 0; i < group.size(); ++i)
    if (l.symbols[i].function) groups_with_functions.insert(group[i]);
  parts = std::min(parts, static_cast<int>(groups_with_functions.size()));
  if (parts <= 1) return {};
  const std::vector<int> part_of = balance(l, group, parts);
  std::vector<LlvmModulePart> out;
  for (int p = 0; p < parts; ++p) out.push_back(assemble(ir, l, part_of, p));
  return out;
}

}  // namespace mtir
