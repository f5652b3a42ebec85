#include "sim/library_frames.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <vector>

namespace mtir::sim {

namespace {

struct Instruction {
  std::string mnemonic, operands;
};

struct Disassembly {
  std::map<std::string, std::vector<Instruction>> bodies;  // by the label objdump chose
  std::map<std::string, std::string> label_of;             // every function symbol (aliases too)
};

bool is_hex(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string::npos; }

Disassembly parse(const std::string& text, DisassemblyArch arch) {
  Disassembly d;
  std::map<std::string, std::vector<std::string>> names_at;  // address -> symbol names
  std::map<std::string, std::string> label_at;
  std::vector<Instruction>* body = nullptr;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() >= 5 && is_hex(w[0]) && line.find(" F ") != std::string::npos) {
      names_at[w[0]].push_back(w.back());  // symbol table: "addr flags F section size name"
    } else if (w.size() == 2 && is_hex(w[0]) && w[1].size() > 3 && w[1].front() == '<' && w[1].back() == ':') {
      const std::string label = w[1].substr(1, w[1].size() - 3);
      body = &d.bodies[label];
      label_at[w[0]] = label;
    } else if (body && !w.empty() && w[0].back() == ':' && is_hex(w[0].substr(0, w[0].size() - 1))) {
      size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      std::string rest = line.substr(tab + 1);
      size_t sep = rest.find('\t');
      Instruction ins{rest.substr(0, sep), sep == std::string::npos ? "" : rest.substr(sep + 1)};
      if (size_t comment = ins.operands.find(" @"); comment != std::string::npos) ins.operands.resize(comment);
      // RISC-V comments start with '#', which in Thumb starts an immediate.
      if (size_t comment = ins.operands.find(" #"); comment != std::string::npos && arch == DisassemblyArch::kRiscv)
        ins.operands.resize(comment);
      body->push_back(ins);
    }
  }
  for (const auto& [addr, label] : label_at) {
    d.label_of[label] = label;
    // The symbol table has addresses with leading zeros to the ELF's width; labels too.
    for (const auto& [sym_addr, names] : names_at)
      if (std::strtoull(sym_addr.c_str(), nullptr, 16) == std::strtoull(addr.c_str(), nullptr, 16))
        for (const auto& n : names) d.label_of[n] = label;
  }
  return d;
}

// The registers of "{r4, r5, lr}" or "{d8-d9}", each `unit` bytes per register number.
int64_t register_list_bytes(const std::string& operands) {
  size_t open = operands.find('{'), close = operands.find('}');
  if (open == std::string::npos || close == std::string::npos) return 0;
  int64_t bytes = 0;
  std::istringstream items(operands.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(items, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    const int64_t unit = item[0] == 'd' ? 8 : 4;
    size_t dash = item.find('-');
    int64_t count = 1;
    if (dash != std::string::npos)
      count = std::atoll(item.c_str() + dash + 2) - std::atoll(item.c_str() + 1) + 1;
    bytes += unit * count;
  }
  return bytes;
}

// The immediate after '#' (Thumb) or the last ',' (RISC-V).
int64_t immediate(const std::string& operands, char after) {
  size_t at = operands.rfind(after);
  return at == std::string::npos ? 0 : std::atoll(operands.c_str() + at + 1);
}

// A called or branched-to function: "<name>" without an offset, or "".
std::string target_of(const std::string& operands) {
  size_t open = operands.rfind('<'), close = operands.rfind('>');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  std::string t = operands.substr(open + 1, close - open - 1);
  return t.find('+') == std::string::npos && t.find('-') == std::string::npos ? t : "";
}

struct FrameScan {
  int64_t bytes = 0;
  bool dynamic = false, indirect = false;
  std::vector<std::string> callees;
  std::vector<std::string> millicode;  // RISC-V -msave-restore helpers: their decrement is the caller's
};

bool starts_with(const std::string& s, const char* p) { return s.compare(0, std::char_traits<char>::length(p), p) == 0; }

void scan_thumb(const Instruction& i, FrameScan& f) {
  const std::string& m = i.mnemonic;
  const std::string& o = i.operands;
  if (starts_with(m, "push") || (starts_with(m, "stmdb") && starts_with(o, "sp!")) || starts_with(m, "vpush") ||
      (starts_with(m, "vstmdb") && starts_with(o, "sp!"))) {
    f.bytes += register_list_bytes(o);
  } else if (starts_with(m, "sub") && starts_with(o, "sp, ")) {
    if (o.find('#') == std::string::npos) f.dynamic = true;
    else f.bytes += immediate(o, '#');
  } else if (starts_with(m, "str") && o.find("[sp, #-") != std::string::npos && o.back() == '!') {
    f.bytes += -immediate(o, '#');
  } else if ((starts_with(m, "mov") && starts_with(o, "sp, ")) || (starts_with(m, "add") && starts_with(o, "sp, r"))) {
    f.dynamic = true;  // the stack pointer from a register: not a fixed frame
  } else if (starts_with(m, "blx") && o.find('<') == std::string::npos) {
    f.indirect = true;
  } else if ((starts_with(m, "bx") && o != "lr") || (starts_with(m, "ldr") && starts_with(o, "pc,") && !starts_with(o, "pc, [sp]")) ||
             (starts_with(m, "mov") && starts_with(o, "pc,"))) {
    f.indirect = true;
  } else if (starts_with(m, "b") || starts_with(m, "cb")) {
    if (std::string t = target_of(o); !t.empty()) f.callees.push_back(t);
  }
}

// A switch's jump: "lw rX,..; add rX,rX,rY; jr rX", a table of offsets from its base
// (a table of function pointers holds addresses, loaded and jumped to without the add).
bool is_jump_table(const std::vector<Instruction>& body, size_t k) {
  if (k < 2) return false;
  const std::string& reg = body[k].operands;
  return body[k - 1].mnemonic == "add" && starts_with(body[k - 1].operands, (reg + "," + reg + ",").c_str()) &&
         body[k - 2].mnemonic == "lw" && starts_with(body[k - 2].operands, (reg + ",").c_str());
}

void scan_riscv(const std::vector<Instruction>& body, size_t k, FrameScan& f) {
  const Instruction& i = body[k];
  const std::string& m = i.mnemonic;
  const std::string& o = i.operands;
  if ((m == "add" || m == "addi" || m == "c.addi16sp") && starts_with(o, "sp,sp,")) {
    if (o.size() > 6 && o[6] == '-') f.bytes += -immediate(o, ',');
    else if (o.size() > 6 && !(o[6] >= '0' && o[6] <= '9')) f.dynamic = true;
  } else if ((m == "sub" && starts_with(o, "sp,")) || (m == "mv" && starts_with(o, "sp,") && o != "sp,s0" && o != "sp,sp")) {
    f.dynamic = true;
  } else if (m == "jalr" || (m == "jr" && o != "ra" && !is_jump_table(body, k))) {
    f.indirect = true;
  } else if (m == "jal" && starts_with(o, "t0,")) {
    if (std::string t = target_of(o); !t.empty()) f.millicode.push_back(t);
  } else if (m == "jal" || m == "j" || m == "call" || m == "tail" || starts_with(m, "b")) {
    if (std::string t = target_of(o); !t.empty()) f.callees.push_back(t);
  }
}

FrameScan scan(const std::vector<Instruction>& body, DisassemblyArch arch, const std::string& self) {
  FrameScan f;
  for (size_t k = 0; k < body.size(); ++k) {
    if (arch == DisassemblyArch::kThumb) scan_thumb(body[k], f);
    else scan_riscv(body, k, f);
  }
  std::vector<std::string> others;
  for (const auto& c : f.callees)
    if (c != self) others.push_back(c);
  f.callees = others;
  return f;
}

}  // namespace

void add_library_frames(CallGraph& graph, const std::string& disassembly, DisassemblyArch arch) {
  const Disassembly d = parse(disassembly, arch);
  std::vector<std::string> work;
  for (const auto& [title, f] : graph.functions)
    if (f.frame_bytes < 0 && is_library_declaration(f.file)) work.push_back(title);
  while (!work.empty()) {
    const std::string title = work.back();
    work.pop_back();
    CallGraphFunction& f = graph.functions[title];
    if (f.frame_bytes >= 0) continue;
    if (f.name.empty()) f = CallGraphFunction{title, "<built-in>", -1, "", {}};
    auto label = d.label_of.find(title);
    if (label == d.label_of.end()) continue;  // not linked in: stays without data
    FrameScan s = scan(d.bodies.at(label->second), arch, label->second);
    for (const auto& helper : s.millicode) {
      auto h = d.label_of.find(helper);
      if (h != d.label_of.end()) s.bytes += scan(d.bodies.at(h->second), arch, h->second).bytes;
    }
    f.frame_bytes = s.bytes;
    f.qualifier = s.dynamic ? "dynamic" : "static";
    f.file = "<built-in>";  // a library function, its frame from the disassembly
    for (const auto& c : s.callees) {
      if (std::find(f.callees.begin(), f.callees.end(), c) == f.callees.end()) f.callees.push_back(c);
      if (!graph.functions.count(c) || graph.functions[c].frame_bytes < 0) work.push_back(c);
    }
    if (s.indirect) f.callees.push_back("__indirect_call");
  }
}

}  // namespace mtir::sim
