// The eval_perf report: summary and op-type ranking add up to the rows; fused groups are one row;
// the text table carries RKNN's columns.
#include <gtest/gtest.h>

#include <numeric>

#include "perf/perf_eval.h"
#include "perf_test_util.h"

namespace npuc::perf {
namespace {

using testing::PerfGraph;

// conv(+relu) -> conv(+add of the first) -> sigmoid on the CPU -> maxpool.
PerfReport smallNetworkReport() {
  PerfGraph p;
  Value* x = p.input("x", {1, 16, 32, 32});
  Node* c1 = p.conv("c1", x, 32, 3);
  Node* r1 = p.op("Relu", "r1", {c1->output()});
  Node* c2 = p.conv("c2", r1->output(), 32, 3);
  Node* add = p.op("Add", "add", {c2->output(), r1->output()});
  Node* sig = p.op("Sigmoid", "sig", {add->output()});
  Node* pool = p.g.appendNode("MaxPool", {sig->output()}, 1, "pool");
  pool->attrs().set("kernel_shape", std::vector<int64_t>{2, 2});
  pool->attrs().set("strides", std::vector<int64_t>{2, 2});
  pool->output()->setType(DType::Float32, {1, 32, 16, 16});
  p.g.addOutput(pool->output());
  PerfOptions o;
  o.op_target = {{"sig", "cpu"}};
  return evaluatePerf(p.g, socProfile("rk3566"), o);
}

TEST(PerfReport, RowsFollowTheTasks) {
  PerfReport r = smallNetworkReport();
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].op_type, "Conv+Relu");
  EXPECT_EQ(r.rows[0].full_name, "c1+r1");
  EXPECT_EQ(r.rows[1].op_type, "Conv+Add");
  EXPECT_EQ(r.rows[2].target, Device::Cpu);
  EXPECT_EQ(r.rows[2].data_type, "FP32");
  EXPECT_EQ(r.rows[3].op_type, "MaxPool");
  EXPECT_EQ(r.rows[3].input_shape, (Shape{1, 32, 32, 32}));
  EXPECT_EQ(r.rows[3].output_shape, (Shape{1, 32, 16, 16}));
  for (size_t i = 0; i < r.rows.size(); ++i) {
    EXPECT_EQ(r.rows[i].id, static_cast<int64_t>(i) + 1);
    EXPECT_GT(r.rows[i].time_us, 0);
    EXPECT_NEAR(r.rows[i].total_cycles, r.rows[i].time_us * 900, 1e-6 * r.rows[i].total_cycles);  // 900 MHz
  }
  // Mac usage is useful MACs over what the array could do in the task's cycles.
  const PerfRow& c1 = r.rows[0];
  double usage = 100.0 * c1.macs / ((c1.total_cycles) * 512);
  EXPECT_NEAR(c1.mac_usage_pct, usage, 1e-9);
  EXPECT_EQ(c1.macs, 32LL * 32 * 32 * 9 * 16);
}

TEST(PerfReport, SummaryAndRankingAddUpToTheRows) {
  PerfReport r = smallNetworkReport();
  double total = 0, kb = 0, npu = 0, cpu = 0, handover = 0;
  for (const PerfRow& row : r.rows) {
    total += row.time_us;
    kb += row.rw_kb;
    handover += row.handover_us;
    (row.target == Device::Npu ? npu : cpu) += row.time_us - row.handover_us;
  }
  const PerfSummary& s = r.summary;
  EXPECT_NEAR(s.total_time_us, total, 1e-9 * total);
  EXPECT_NEAR(s.total_time_us, s.npu_time_us + s.cpu_time_us + s.handover_time_us, 1e-9 * total);
  EXPECT_NEAR(s.npu_time_us, npu, 1e-9 * total);
  EXPECT_NEAR(s.cpu_time_us, cpu, 1e-9 * total);
  EXPECT_NEAR(s.handover_time_us, handover, 1e-9 * total);
  EXPECT_GT(s.handover_time_us, 0);
  EXPECT_EQ(s.handovers, 2);
  EXPECT_NEAR(s.fps, 1e6 / total, 1e-9 * s.fps);
  EXPECT_NEAR(s.ddr_bytes_per_frame, kb * 1024, 1e-9 * s.ddr_bytes_per_frame);
  EXPECT_EQ(s.npu_tasks, 3);
  EXPECT_EQ(s.cpu_ops, 1);

  int64_t count = 0;
  double ranked = 0, share = 0;
  for (size_t i = 0; i < r.ranking.size(); ++i) {
    count += r.ranking[i].count;
    ranked += r.ranking[i].time_us;
    share += r.ranking[i].share_pct;
    if (i) EXPECT_GE(r.ranking[i - 1].time_us, r.ranking[i].time_us);
  }
  EXPECT_EQ(count, static_cast<int64_t>(r.rows.size()));
  EXPECT_NEAR(ranked, total, 1e-9 * total);
  EXPECT_NEAR(share, 100.0, 1e-9);
}

TEST(PerfReport, TextHasTheRknnColumns) {
  std::string text = smallNetworkReport().toText();
  for (const char* col :
       {"ID", "OpType", "DataType", "Target", "InputShape", "OutputShape", "DDRCycles", "NPUCycles",
        "TotalCycles", "Time(us)", "MacUsage(%)", "RW(KB)", "TaskNumber", "Bottleneck", "FullName",
        "Total time (us)", "FPS", "Operator Time Consuming Ranking Table", "c1+r1"})
    EXPECT_NE(text.find(col), std::string::npos) << col;
}

}  // namespace
}  // namespace npuc::perf
