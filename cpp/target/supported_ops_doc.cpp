#include "target/supported_ops_doc.h"

#include <sstream>

#include "opset/registry.h"
#include "target/op_constraints.h"

namespace npuc {

namespace {

std::string joined(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

void writeHeader(std::ostringstream& md) {
  md << "# Supported ops per SoC\n\n"
     << "<!-- Generated from opset/soc/*.yaml and cpp/target/op_constraints.cpp; do not edit by hand.\n"
     << "     Regenerate: " << kSupportedOpsRegenCommand << " -->\n\n"
     << "The partitioner places a node on the NPU only when every check below passes; otherwise it falls\n"
     << "back to the CPU, and the partition report says which check failed. These hold for every op on\n"
     << "every SoC:\n\n";
  for (const AlwaysOnCheck& c : alwaysOnChecks()) md << "- **" << c.name << "**: " << c.words << "\n";
  md << "\nLimits marked *(assumed)* are not published by the vendor; the profile's `sources:` block\n"
     << "states each assumption (docs/soc_profiles.md describes the profile format).\n";
}

// Ops whose NPU decision is made at registration (OpTraits::cpu_reason), the same for every SoC.
void writeCpuOnlyOps(std::ostringstream& md) {
  std::vector<const OpSchema*> cpu_only;
  for (const OpSchema* s : OpRegistry::instance().schemas())
    if (!s->traits.cpu_reason.empty()) cpu_only.push_back(s);
  if (cpu_only.empty()) return;
  md << "\nThese ops run on the CPU on every SoC, for the reason given:\n\n| op | why not on the NPU "
        "|\n|---|---|\n";
  for (const OpSchema* s : cpu_only) md << "| " << s->op_type << " | " << s->traits.cpu_reason << " |\n";
}

void writeNpuSummary(std::ostringstream& md, const SocProfile& soc) {
  std::vector<std::string> dtypes;
  for (NpuDType t : soc.dtypes) dtypes.push_back(npuDTypeName(t));
  md << "NPU: " << soc.npu.cores << " core(s) at " << soc.npu.clock_mhz << " MHz, "
     << soc.npu.int8_macs_per_cycle_per_core << " int8 / " << soc.npu.fp16_macs_per_cycle_per_core
     << " 16-bit MACs per cycle per core; dtypes " << joined(dtypes) << ".\n\n";
  md << "CPU fallback: "
     << (soc.cpu.supports_all_ops ? std::string("every op npuc implements")
                                  : "only " + joined(soc.cpu.supported_ops))
     << ".\n\n";
}

void writeAlignment(std::ostringstream& md, const SocProfile& soc) {
  md << "Channel alignment:\n\n| dtype | Conv in | Conv out | depthwise | other |\n|---|---|---|---|---|\n";
  for (NpuDType t : soc.dtypes) {
    const ChannelAlignment& a = soc.channel_alignment.at(t);
    md << "| " << npuDTypeName(t) << " | " << a.conv_in << " | " << a.conv_out << " | " << a.depthwise
       << " | " << a.other << " |\n";
  }
  md << "\n";
}

void writeOps(std::ostringstream& md, const SocProfile& soc) {
  md << "| op | NPU constraints |\n|---|---|\n";
  for (const OpSupport& op : soc.ops) {
    std::vector<std::string> limits = describeOpLimits(op);
    md << "| " << op.op_type << " | " << (limits.empty() ? std::string("-") : joined(limits, "; ")) << " |\n";
  }
  md << "\n";
}

void writeFusion(std::ostringstream& md, const SocProfile& soc) {
  md << "Fused into one NPU task:\n\n";
  for (const FusionRule& r : soc.fusion) {
    md << "- " << joined(r.anchors, " or ") << " followed by one of " << joined(r.activations, ", ")
       << (r.residual_add ? "; by Add; or by one of those activations and then Add" : "")
       << (r.assumed ? " *(assumed)*" : "") << "\n";
  }
  md << "\n";
}

}  // namespace

std::string supportedOpsMarkdown(const std::vector<const SocProfile*>& socs) {
  std::ostringstream md;
  writeHeader(md);
  writeCpuOnlyOps(md);
  for (const SocProfile* soc : socs) {
    md << "\n## " << soc->name;
    if (!soc->aliases.empty()) md << " (also " << joined(soc->aliases) << ")";
    md << "\n\n";
    if (!soc->description.empty()) md << soc->description << ".\n\n";
    writeNpuSummary(md, *soc);
    writeAlignment(md, *soc);
    writeOps(md, *soc);
    writeFusion(md, *soc);
  }
  std::string out = md.str();
  while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

std::string supportedOpsMarkdown() {
  SocCatalog builtin = SocCatalog::builtinOnly();
  std::vector<const SocProfile*> socs;
  for (const std::string& name : builtin.names()) socs.push_back(&builtin.get(name));
  return supportedOpsMarkdown(socs);
}

}  // namespace npuc
