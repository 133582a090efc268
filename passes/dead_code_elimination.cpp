// dead_code_elimination: erases nodes none of whose outputs is used or a graph output, and
// constants nobody reads. Graph inputs stay (they are the model's API even when unused).
#include "passes/core/pass.h"
#include "passes/core/rewriter.h"

namespace npuc {
namespace {

class DeadCodeEliminationPass : public Pass {
 public:
  const char* name() const override { return "dead_code_elimination"; }
  const char* description() const override { return "removes nodes and constants whose results nobody uses"; }

  size_t run(Graph& graph, PassContext& /*ctx*/) override {
    size_t removed = 0;
    // Backwards, so a dead chain goes in one sweep: its consumer is gone before its producer is seen.
    for (Node* n = graph.lastNode(); n;) {
      Node* prev = n->prev();
      if (isTriviallyDead(*n)) {
        graph.eraseNode(n);
        ++removed;
      }
      n = prev;
    }
    return removed + graph.removeUnusedValues();
  }
};

}  // namespace

std::unique_ptr<Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeEliminationPass>();
}

}  // namespace npuc
