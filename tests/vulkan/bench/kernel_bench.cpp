// vulkan_kernel_bench: every engine kernel alone at the gpt-oss-20b shapes, timed with GPU
// timestamps (median of repeated dispatches, weights rotated through copies larger than the L2 so
// decode kernels read memory), with achieved TFLOP/s or GB/s, and each pipeline's register/spill
// statistics where the driver reports them (--pipeline-stats). A measuring tool for kernel work,
// not a test: ctest does not run it. Usage: vulkan_kernel_bench [repeats [sections]] [--tuning ...],
// sections a comma list of prefill, decode (matvec: its dense products alone), attention, stream,
// floor, hot (default the first three): a shape sweep times only the kernels it changes; stream and
// floor time the bytes decode attention (stream) and the other decode kernels (floor) read, read
// by a kernel that does nothing else (tests/vulkan/shaders/stream_read.comp); hot times the dense
// products and the expert kernels with their weights in the L2 (one copy, used again and again);
// blocks times the dense products in every ggml block type beside BF16 (with prefill, the GEMM too);
// mma times the cooperative matrices themselves (tests/vulkan/shaders/coop_mma.comp): one 16 x 16 x 16
// product's latency (a chain of dependent products), the units' rate (several chains, several
// subgroups on each of a multiprocessor's four schedulers), with A and B in registers or loaded
// from shared memory before each product.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "runtime/vulkan/device_tensors.h"
#include "runtime/rope.h"
#include "runtime/vulkan/kernels.h"
#include "shaders/kernel_abi.h"
#include "tests/random_blocks.h"
#include "tests/vulkan/shaders/test_shader_registry.h"
#include "tools/common/vulkan_options.h"

namespace vk = gptoss::vk;
using gptoss::DType;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::unique_ptr<vk::Buffer> device_floats(const vk::Context& ctx, const std::vector<float>& values) {
  vk::DeviceUploader up(ctx);
  return up.upload(std::span(reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4));
}
std::unique_ptr<vk::Buffer> device_words(const vk::Context& ctx, const std::vector<uint32_t>& values) {
  vk::DeviceUploader up(ctx);
  return up.upload(std::span(reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4));
}

vk::DeviceMatrix matrix(const vk::Context& ctx, DType type, uint32_t rows, uint32_t cols, uint32_t seed) {
  // Random bytes of the right size: timing does not need meaningful values, only realistic ones
  // (random floats encoded where the codecs have an encoder: BF16, F16, Q8_0, Q4_0 .. Q6_K; the
  // other block types random blocks with sane f16 fields).
  const auto f = random_floats(std::min<size_t>(size_t{rows} * cols, size_t{1} << 24), seed, 0.05f);
  std::vector<uint8_t> bytes(*gptoss::dtype_byte_size(type, size_t{rows} * cols));
  std::vector<uint8_t> chunk(*gptoss::dtype_byte_size(type, f.size()));
  if (gptoss::is_encodable(type))
    gptoss::encode_from_f32(type, f.data(), f.size(), chunk.data());
  else
    chunk = gptoss::test::random_blocks(type, f.size(), seed);
  for (size_t at = 0; at < bytes.size(); at += chunk.size())
    std::copy_n(chunk.begin(), std::min(chunk.size(), bytes.size() - at), bytes.begin() + static_cast<std::ptrdiff_t>(at));
  gptoss::CanonicalTensor t{{gptoss::TensorRole::AttnQ, 0, "bench", {rows, cols}}, type,
                            std::make_shared<gptoss::OwnedSource>(std::move(bytes)), "bench"};
  vk::DeviceUploader up(ctx);
  return vk::upload_matrix(ctx, up, t);
}

vk::DeviceExperts experts(const vk::Context& ctx, uint32_t count, uint32_t rows, uint32_t cols, uint32_t seed) {
  const uint64_t blocks = uint64_t{count} * rows * (cols / 32);
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(blocks * 16), s(blocks);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  for (auto& x : s) x = static_cast<uint8_t>(118 + rng() % 6);
  const uint64_t n = cols / 32;
  gptoss::CanonicalTensor bt{{gptoss::TensorRole::Mlp1Blocks, 0, "b", {count, rows, n, 16}}, DType::U8,
                             std::make_shared<gptoss::OwnedSource>(std::move(b)), "bench"};
  gptoss::CanonicalTensor st{{gptoss::TensorRole::Mlp1Scales, 0, "s", {count, rows, n}}, DType::U8,
                             std::make_shared<gptoss::OwnedSource>(std::move(s)), "bench"};
  vk::DeviceUploader up(ctx);
  return vk::upload_experts(ctx, up, bt, st);
}

struct Bench {
  const vk::Context& ctx;
  vk::Kernels& kernels;
  uint32_t repeats;
  VkQueryPool pool = VK_NULL_HANDLE;

  // Median microseconds of one step, `add(list, i)` appending repetition i (each repetition one
  // or more dispatches; the time of a repetition is from the end of the previous to its end).
  double time(const std::function<void(vk::DispatchList&, uint32_t)>& add, uint32_t steps_per_repeat = 1) {
    // Clocks ramp up under load, over a few hundred milliseconds (not a few rounds of a 10 us
    // kernel, which left the small kernels timed at 2-3x their loaded time): run the same work
    // untimed for half a second first.
    const auto heat_start = std::chrono::steady_clock::now();
    for (int round = 0; round < 3 || std::chrono::steady_clock::now() - heat_start < std::chrono::milliseconds(500);
         ++round) {
      vk::DispatchList heat;
      for (uint32_t i = 0; i < 4 * repeats; ++i) add(heat, i);
      ctx.run_once([&](VkCommandBuffer cb) { heat.record(cb); });
    }
    vk::DispatchList list;
    const uint32_t warmup = 3;
    for (uint32_t i = 0; i < warmup + repeats; ++i) add(list, i);
    const uint32_t queries = static_cast<uint32_t>(list.size()) + 1;
    if (pool) vkDestroyQueryPool(ctx.device(), pool, nullptr);
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = queries;
    vk::check(vkCreateQueryPool(ctx.device(), &info, nullptr, &pool), "vkCreateQueryPool");
    ctx.run_once([&](VkCommandBuffer cb) {
      vkCmdResetQueryPool(cb, pool, 0, queries);
      list.record(cb, pool, 0);
    });
    std::vector<uint64_t> ticks(queries);
    vk::check(vkGetQueryPoolResults(ctx.device(), pool, 0, queries, ticks.size() * 8, ticks.data(), 8,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
              "vkGetQueryPoolResults");
    std::vector<double> us;
    for (uint32_t i = warmup; i < warmup + repeats; ++i) {
      const uint32_t first = i * steps_per_repeat, last = (i + 1) * steps_per_repeat;
      us.push_back(static_cast<double>(ticks[last] - ticks[first]) * ctx.info().timestamp_period_ns / 1e3);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  }
  ~Bench() {
    if (pool) vkDestroyQueryPool(ctx.device(), pool, nullptr);
  }
};

void report(const char* what, double us, double flops, double bytes) {
  std::printf("| %-44s | %9.2f | %8.2f | %8.1f |\n", what, us, flops > 0 ? flops / us / 1e6 : 0.0,
              bytes > 0 ? bytes / us / 1e3 : 0.0);
}

// The memory system's time for bytes a kernel reads (sections stream and floor): `quads` uvec4s of
// each of two buffers read by tests/vulkan/shaders/stream_read.comp in `groups` workgroups, doing
// nothing else, repetition i reading copies a[i % n], b[i % n].
struct StreamRead {
  struct Push {
    uint64_t a, b, sink;
    uint32_t quads;
  };
  vk::Pipeline pipeline;
  std::unique_ptr<vk::Buffer> sink;  // the word stream_read never writes
  explicit StreamRead(const vk::Context& ctx)
      : pipeline(ctx, "stream_read", gptoss::test::test_shader_registry().at("stream_read"), sizeof(Push)),
        sink(device_words(ctx, {0u})) {}
  double time(Bench& bench, const std::vector<std::unique_ptr<vk::Buffer>>& a,
              const std::vector<std::unique_ptr<vk::Buffer>>& b, uint32_t quads, uint32_t groups) {
    return bench.time([&](vk::DispatchList& l, uint32_t i) {
      const Push push{a[i % a.size()]->address(), b[i % b.size()]->address(), sink->address(), quads};
      l.dispatch(pipeline, push, groups);
    });
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"every engine kernel alone at the gpt-oss-20b shapes (see the source's first lines)"};
  uint32_t repeats = 20;
  std::string sections = "prefill,decode,attention";
  gptoss::runtime::VulkanTuning tuning;
  app.add_option("repeats", repeats, "timed dispatches per kernel")->capture_default_str();
  app.add_option("sections", sections, "prefill, decode, attention, stream, floor, hot, blocks, mma (comma list)")->capture_default_str();
  gptoss::add_vulkan_options(app, tuning);
  CLI11_PARSE(app, argc, argv);
  const auto timed = [&](const char* section) { return sections.find(section) != std::string::npos; };
  auto ctx = vk::Context::create(std::nullopt, {tuning.cooperative_matrix, tuning.pipeline_statistics});
  vk::Kernels kernels(*ctx, tuning);
  Bench bench{*ctx, kernels, repeats};
  std::printf("%s (%s), subgroup %u, cooperative matrix %s, integer dot product %s%s\n", ctx->info().name.c_str(),
              ctx->info().driver.c_str(), ctx->info().subgroup_size, kernels.cooperative() ? "on" : "off",
              kernels.integer_dot_product() ? "on" : "off",
              ctx->info().integer_dot_product_accelerated ? " (accelerated)" : "");
  std::printf("| kernel (gpt-oss-20b shapes) | us | TFLOP/s | GB/s |\n|---|---:|---:|---:|\n");
  const uint32_t H = 2880, Q = 4096, KV = 512, I = 2880, E = 32, k = 4, T = 512, V = 201088;
  // Bytes the decode products read per token: k experts' MXFP4 rows (17 bytes per block of 32),
  // the dense matrices in their encoding.
  const double mlp1_bytes = double{k} * 2 * I * (H / 32) * 17, mlp2_bytes = double{k} * H * (I / 32) * 17;
  const auto dense_bytes = [](DType type, uint32_t rows, uint32_t cols) {
    return static_cast<double>(*gptoss::dtype_byte_size(type, size_t{rows} * cols));
  };

  // ---- prefill GEMMs ----
  auto a = device_floats(*ctx, random_floats(size_t{T} * Q, 1));
  auto c = device_floats(*ctx, std::vector<float>(size_t{T} * (Q + 2 * KV), 0.0f));
  auto bias = device_floats(*ctx, random_floats(Q + 2 * KV, 2));
  auto hi = device_floats(*ctx, std::vector<float>(size_t{T} * k * I / 2 + 16)), lo = device_floats(*ctx, std::vector<float>(size_t{T} * k * I / 2 + 16));
  const vk::Kernels::Halves halves{hi->address(), lo->address()};
  for (DType type : {DType::BF16, DType::Q8_0}) {
    if (!timed("prefill")) break;
    const auto qkv = matrix(*ctx, type, Q + 2 * KV, H, 3);
    const auto out = matrix(*ctx, type, H, Q, 4);
    for (bool portable : {false, true}) {
      if (!portable && !kernels.cooperative()) continue;
      kernels.force_portable(portable);
      const std::string tag = std::string(portable ? "portable " : "coop ") + std::string(gptoss::dtype_name(type));
      double us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.gemm(l, qkv, bias->address(), a->address(), H, c->address(), Q + 2 * KV, T, false, halves);
      });
      report(("gemm qkv 512x5120x2880 " + tag).c_str(), us, 2.0 * T * (Q + 2 * KV) * H, 0);
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.gemm(l, out, bias->address(), a->address(), Q, c->address(), H, T, true, halves);
      });
      report(("gemm out 512x2880x4096 " + tag).c_str(), us, 2.0 * T * H * Q, 0);
    }
    kernels.force_portable(false);
  }

  // ---- prefill MoE: the route (for each kernel choice), then the two expert GEMMs ----
  {
    std::mt19937 rng(5);
    std::vector<uint32_t> chosen;
    for (uint32_t t = 0; t < T; ++t) {
      std::vector<uint32_t> all(E);
      std::iota(all.begin(), all.end(), 0u);
      std::shuffle(all.begin(), all.end(), rng);
      chosen.insert(chosen.end(), all.begin(), all.begin() + k);
    }
    auto chosen_buf = device_words(*ctx, chosen);
    auto gate = device_floats(*ctx, random_floats(size_t{T} * k, 6));
    auto xn = device_floats(*ctx, random_floats(size_t{T} * H, 7));
    auto act = device_floats(*ctx, random_floats(size_t{T} * k * I, 19));  // never time on zeros
    auto y = device_floats(*ctx, std::vector<float>(size_t{T} * k * H));
    auto assign = device_words(*ctx, std::vector<uint32_t>(T * k)), row_of = device_words(*ctx, std::vector<uint32_t>(T * k));
    auto tiles = device_words(*ctx, std::vector<uint32_t>(3 * vk::Kernels::max_moe_tiles(T * k, E)));
    vk::Buffer dispatch(*ctx, 32, false);
    auto b1 = device_floats(*ctx, random_floats(size_t{E} * 2 * I, 8)), b2 = device_floats(*ctx, random_floats(size_t{E} * H, 9));
    const auto mlp1 = experts(*ctx, E, 2 * I, H, 10), mlp2 = experts(*ctx, E, H, I, 11);
    const vk::Kernels::MoeTables tables{assign->address(), row_of->address(), tiles->address(), &dispatch, T * k};
    for (bool portable : {false, true}) {
      if (!timed("prefill")) break;
      if (!portable && !kernels.cooperative()) continue;
      kernels.force_portable(portable);
      vk::DispatchList route;  // the grids of the kernels picked now
      kernels.moe_route(route, chosen_buf->address(), tables, T, k, mlp1, mlp2);
      ctx->run_once([&](VkCommandBuffer cb) { route.record(cb); });
      const std::string tag = portable ? " portable" : " coop";
      double us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.expert_gemm(l, mlp1, b1->address(), xn->address(), T, tables, act->address(), true, 7.0f, halves);
      });
      report(("expert_gemm mlp1 2048 rows x5760x2880" + tag).c_str(), us, 2.0 * T * k * 2 * I * H, 0);
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.expert_gemm(l, mlp2, b2->address(), act->address(), T * k, tables, y->address(), false, 0.0f, halves);
      });
      report(("expert_gemm mlp2 2048 rows x2880x2880" + tag).c_str(), us, 2.0 * T * k * H * I, 0);
    }
    kernels.force_portable(false);
    double us = 0;
    auto x = device_floats(*ctx, random_floats(size_t{T} * H, 12));
    if (timed("prefill")) {
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.moe_route(l, chosen_buf->address(), tables, T, k, mlp1, mlp2);
      });
      report("moe_route 512 tokens", us, 0, 0);
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.moe_combine(l, y->address(), tables, chosen_buf->address(), gate->address(), x->address(), H, k, T);
      });
      report("moe_combine 512 tokens", us, 0, 0);
    }
    const auto router = matrix(*ctx, DType::BF16, E, H, 13);
    auto norm = device_floats(*ctx, random_floats(H, 14)), rb = device_floats(*ctx, random_floats(E, 15));
    auto logits = device_floats(*ctx, random_floats(E, 16));
    if (timed("prefill")) {
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.router(l, router, rb->address(), x->address(), norm->address(),
                       {xn->address(), chosen_buf->address(), gate->address(), 0}, k, T, 1e-5f);
      });
      report("router 512 tokens", us, 0, 0);
    }
    if (timed("decode") || timed("hot")) {
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.router(l, router, rb->address(), x->address(), norm->address(), {xn->address(), 0, 0, logits->address()},
                       k, 1, 1e-5f);
      });
      report("router decode (logits)", us, 0, 0);
      auto chosen_out = device_words(*ctx, std::vector<uint32_t>(k)), gate_out = device_floats(*ctx, std::vector<float>(k));
      const vk::Kernels::Choices ranked{chosen_out->address(), gate_out->address(), logits->address(), E};

      // ---- decode experts: 4 of 32, weights rotated over 4 layers' worth ----
      std::vector<vk::DeviceExperts> m1, m2;
      for (uint32_t i = 0; i < 4; ++i) {
        m1.push_back(experts(*ctx, E, 2 * I, H, 20 + i));
        m2.push_back(experts(*ctx, E, H, I, 30 + i));
      }
      us = bench.time([&](vk::DispatchList& l, uint32_t i) {
        kernels.expert_mlp1(l, m1[i % 4], b1->address(), xn->address(), ranked, act->address(), k, 7.0f);
      });
      report("expert_mlp1 decode (4 experts)", us, 0, mlp1_bytes);
      auto partials = device_floats(*ctx, std::vector<float>(vk::Kernels::expert_mlp2_partials(H, k)));
      auto counters = device_words(*ctx, std::vector<uint32_t>(vk::Kernels::kCounters, 0u));
      us = bench.time([&](vk::DispatchList& l, uint32_t i) {
        kernels.expert_mlp2(l, m2[i % 4], b2->address(), act->address(), chosen_buf->address(), gate->address(),
                            x->address(), k, {partials->address(), counters->address()});
      });
      report("expert_mlp2 decode (4 experts)", us, 0, mlp2_bytes);
      // Section hot: the same experts every time, so their bytes come from the L2 (what a prefetch
      // of them beside an earlier kernel would give).
      if (timed("hot")) {
        us = bench.time([&](vk::DispatchList& l, uint32_t) {
          kernels.expert_mlp1(l, m1[0], b1->address(), xn->address(), ranked, act->address(), k, 7.0f);
        });
        report("hot: expert_mlp1 decode (4 experts)", us, 0, mlp1_bytes);
        us = bench.time([&](vk::DispatchList& l, uint32_t) {
          kernels.expert_mlp2(l, m2[0], b2->address(), act->address(), chosen_buf->address(), gate->address(),
                              x->address(), k, {partials->address(), counters->address()});
        });
        report("hot: expert_mlp2 decode (4 experts)", us, 0, mlp2_bytes);
      }
    }
  }

  // ---- ggml's block types (section blocks) beside BF16: the decode matvec of attn_output (2880 x
  // 4096, the width every type fits) and of qkv (5120 x 2880, the 32-value types), copies rotated
  // over more than twice the L2, and the prefill GEMM of attn_output over T tokens ----
  if (timed("blocks")) {
    auto x = device_floats(*ctx, random_floats(Q, 80)), y = device_floats(*ctx, std::vector<float>(Q + 2 * KV));
    auto norm = device_floats(*ctx, random_floats(H, 81)), b = device_floats(*ctx, random_floats(Q + 2 * KV, 82));
    std::vector<DType> types = {DType::BF16};
    for (const auto& e : vk::block_encodings()) types.push_back(e.type);
    for (DType type : types) {
      const std::string name(gptoss::dtype_name(type));
      for (const auto& [rows, cols] : {std::pair<uint32_t, uint32_t>{H, Q}, {Q + 2 * KV, H}}) {
        if (cols % gptoss::dtype_info(type).block_elements != 0) continue;
        const double bytes = dense_bytes(type, rows, cols);
        std::vector<vk::DeviceMatrix> copies;
        for (uint32_t i = 0; i < std::max(6.0, std::ceil(120e6 / bytes)); ++i) copies.push_back(matrix(*ctx, type, rows, cols, 90 + i));
        const bool normed = rows != H;
        double us = bench.time([&](vk::DispatchList& l, uint32_t i) {
          kernels.matvec(l, copies[i % copies.size()], b->address(), x->address(), normed ? norm->address() : 0,
                         y->address(), !normed, 1e-5f);
        });
        report(("blocks: matvec " + std::to_string(rows) + "x" + std::to_string(cols) + " " + name).c_str(), us, 0, bytes);
        if (normed || !timed("prefill")) continue;
        for (bool portable : {false, true}) {
          if (!portable && !kernels.cooperative()) continue;
          kernels.force_portable(portable);
          us = bench.time([&](vk::DispatchList& l, uint32_t) {
            kernels.gemm(l, copies[0], bias->address(), a->address(), Q, c->address(), H, T, true, halves);
          });
          report(("blocks: gemm " + std::string(portable ? "portable " : "coop ") + std::to_string(T) + "x" +
                  std::to_string(rows) + "x" + std::to_string(cols) + " " + name)
                     .c_str(),
                 us, 2.0 * T * rows * cols, 0);
        }
        kernels.force_portable(false);
      }
    }
  }

  // ---- the floor: what any dispatch costs in a chain of dependent steps (launch, barrier, drain),
  // which every decode kernel pays ~6 times per layer ----
  if (timed("decode")) {
    auto x = device_floats(*ctx, random_floats(H, 70)), w = device_floats(*ctx, random_floats(H, 71));
    auto y = device_floats(*ctx, std::vector<float>(H));
    double us = bench.time([&](vk::DispatchList& l, uint32_t) {
      kernels.rmsnorm(l, x->address(), w->address(), y->address(), H, 1, 0, 1e-5f);
    });
    report("floor: rmsnorm of one row (one workgroup)", us, 0, 0);
    us = bench.time([&](vk::DispatchList& l, uint32_t) { l.copy(*x, 0, *y, 0, 4); });
    report("floor: copy of 4 bytes", us, 0, 0);
  }

  // ---- decode matvecs, weights rotated over copies bigger than the L2 (section decode, or matvec
  // alone) ----
  if (timed("decode") || timed("matvec") || timed("hot")) {
    auto x = device_floats(*ctx, random_floats(Q, 16)), y = device_floats(*ctx, std::vector<float>(V));
    auto norm = device_floats(*ctx, random_floats(H, 17)), b = device_floats(*ctx, random_floats(Q + 2 * KV, 18));
    for (DType type : {DType::BF16, DType::Q8_0}) {
      std::vector<vk::DeviceMatrix> qkv;
      for (uint32_t i = 0; i < 6; ++i) qkv.push_back(matrix(*ctx, type, Q + 2 * KV, H, 40 + i));
      const double bytes = static_cast<double>(qkv[0].buffer->size());
      double us = bench.time([&](vk::DispatchList& l, uint32_t i) {
        kernels.matvec(l, qkv[i % 6], b->address(), x->address(), norm->address(), y->address(), false, 1e-5f);
      });
      report((std::string("matvec qkv 5120x2880 normed ") + std::string(gptoss::dtype_name(type))).c_str(), us, 0, bytes);
      std::vector<vk::DeviceMatrix> outs;
      for (uint32_t i = 0; i < 6; ++i) outs.push_back(matrix(*ctx, type, H, Q, 60 + i));
      us = bench.time([&](vk::DispatchList& l, uint32_t i) {
        kernels.matvec(l, outs[i % 6], b->address(), x->address(), 0, y->address(), true, 1e-5f);
      });
      report((std::string("matvec out 2880x4096 ") + std::string(gptoss::dtype_name(type))).c_str(), us, 0,
             static_cast<double>(outs[0].buffer->size()));
      if (!timed("hot")) continue;
      // The same matrix every time: its bytes from the L2 (BF16 qkv 29 MB, the H100's L2 50 MB).
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.matvec(l, qkv[0], b->address(), x->address(), norm->address(), y->address(), false, 1e-5f);
      });
      report((std::string("hot: matvec qkv normed ") + std::string(gptoss::dtype_name(type))).c_str(), us, 0, bytes);
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.matvec(l, outs[0], b->address(), x->address(), 0, y->address(), true, 1e-5f);
      });
      report((std::string("hot: matvec out ") + std::string(gptoss::dtype_name(type))).c_str(), us, 0,
             static_cast<double>(outs[0].buffer->size()));
    }
    if (timed("decode") || timed("matvec")) {
      {
        const auto unembedding = matrix(*ctx, DType::Q8_0, V, H, 51);
        double us = bench.time([&](vk::DispatchList& l, uint32_t) {
          kernels.matvec(l, unembedding, 0, x->address(), norm->address(), y->address(), false, 1e-5f);
        });
        report("matvec unembedding 201088x2880 q8_0", us, 0, static_cast<double>(unembedding.buffer->size()));
      }
      const auto unembedding = matrix(*ctx, DType::BF16, V, H, 50);
      double us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.matvec(l, unembedding, 0, x->address(), norm->address(), y->address(), false, 1e-5f);
      });
      report("matvec unembedding 201088x2880 bf16", us, 0, static_cast<double>(unembedding.buffer->size()));
      auto result = device_words(*ctx, std::vector<uint32_t>(4));
      auto partials = device_floats(*ctx, std::vector<float>(2 * ARGMAX_GROUPS));
      auto counters = device_words(*ctx, std::vector<uint32_t>(vk::Kernels::kCounters, 0u));
      us = bench.time([&](vk::DispatchList& l, uint32_t) {
        kernels.argmax(l, y->address(), result->address(), V, {partials->address(), counters->address()});
      });
      report("argmax 201088", us, 0, V * 4.0);
    }
  }

  std::optional<StreamRead> stream;  // sections stream and floor
  if (timed("stream") || timed("floor")) stream.emplace(*ctx);

  // ---- attention (decode at a short and long context too: the kernel's ranges follow the keys) ----
  for (uint32_t position : {128u, 512u, 4096u, 16384u}) {
    if (!timed("attention") && !timed("stream")) break;
    const uint32_t slots = std::max(4224u, position + 128u);
    auto qkv = device_floats(*ctx, random_floats(size_t{T} * (Q + 2 * KV), 60));
    auto kc = device_floats(*ctx, random_floats(size_t{slots} * KV, 61)), vc = device_floats(*ctx, random_floats(size_t{slots} * KV, 62));
    // Decode reads each layer's cache once per token, from memory: caches rotated over copies
    // larger than the L2, as the engine's 24 layers are (prefill reads one cache many times).
    std::vector<std::unique_ptr<vk::Buffer>> kcs, vcs;
    for (uint32_t i = 0; i < 8; ++i) {
      kcs.push_back(device_floats(*ctx, random_floats(size_t{slots} * KV, 61 + 2 * i)));
      vcs.push_back(device_floats(*ctx, random_floats(size_t{slots} * KV, 62 + 2 * i)));
    }
    std::vector<float> inv(32);
    for (uint32_t i = 0; i < 32; ++i) inv[i] = static_cast<float>(std::pow(150000.0, -i / 32.0));
    auto f = device_floats(*ctx, gptoss::runtime::rope_pairs(position + 1, inv, 1.0f)), sinks = device_floats(*ctx, random_floats(64, 63));
    auto step = device_words(*ctx, {position, 1u, 0u, 0u});
    auto out = device_floats(*ctx, std::vector<float>(size_t{T} * Q));
    // An f16 cache reads the first half of the same buffers as halves (timing only: their values
    // are the f32 data's bits).
    for (const uint32_t cache : {vk::abi::ENC_F32, vk::abi::ENC_F16})
      for (uint32_t window : {0u, 128u}) {
        if (!timed("attention")) break;
        const vk::Kernels::AttentionShape shape{64, 8, 64, window, slots, 0.125f, cache};
        auto partials = device_floats(*ctx, std::vector<float>(kernels.decode_attention_partials(shape)));
        auto counters = device_words(*ctx, std::vector<uint32_t>(vk::Kernels::kCounters, 0u));
        double us = bench.time([&](vk::DispatchList& l, uint32_t i) {
          kernels.attention_decode(l, shape, qkv->address(), kcs[i % 8]->address(), vcs[i % 8]->address(), f->address(),
                                   step->address(), sinks->address(), out->address(), {partials->address(), counters->address()});
        });
        const std::string name = std::string("attention decode ") + (cache == vk::abi::ENC_F16 ? "f16 " : "") + "@" +
                                 std::to_string(position) + (window ? " window 128" : " full");
        report(name.c_str(), us, 0,
               2.0 * std::min(position + 1, window ? window : position + 1) * KV * (cache == vk::abi::ENC_F16 ? 2 : 4));
      }
    // The floor under decode attention's reads (section stream): the same number of bytes of an
    // f16 cache (keys and values before the position, one stretch of each buffer) streamed by a
    // kernel that does nothing else, in as many workgroups as the engine's decode attention runs at
    // this position past the short reach (two query heads per workgroup, its ranges by the
    // launcher's rule), one per multiprocessor, and four per multiprocessor.
    if (timed("stream")) {
      const uint32_t quads = (position + 1) * KV * 2 / 16;
      const uint32_t sms = std::max<uint32_t>(1, ctx->info().multiprocessors);
      const vk::Kernels::AttentionShape full{64, 8, 64, 0, slots, 0.125f, vk::abi::ENC_F16};
      const uint32_t columns = 64 / vk::abi::kDefaultAttentionHeads;
      const uint32_t splits = vk::Kernels::attention_wave_splits(columns, ctx->info().multiprocessors,
                                                                 kernels.decode_attention_splits(full),
                                                                 kernels.decode_attention_resident(full));
      const uint32_t ranges = std::min(splits, (position + 1 + kernels.attention_range_keys() - 1) /
                                                   kernels.attention_range_keys());
      for (const uint32_t groups : {columns * ranges, sms, 4 * sms}) {
        const double us = stream->time(bench, kcs, vcs, quads, groups);
        report(("stream f16 K+V @" + std::to_string(position) + ", " + std::to_string(groups) + " groups").c_str(), us,
               0, 2.0 * quads * 16);
      }
    }
  }
  // ---- prefill attention: T new queries after position - T keys (gptoss-bench's -d position - T),
  // an f32 and an f16 cache (the f16 one reads the first half of the same buffers), full and
  // sliding; the flop count is the causal mask's useful products ----
  for (uint32_t position : {T, 4096u + T, 16384u + T}) {
    if (!timed("attention")) break;
    const uint32_t slots = 16384u + T;
    auto qkv = device_floats(*ctx, random_floats(size_t{T} * (Q + 2 * KV), 70));
    auto kc = device_floats(*ctx, random_floats(size_t{slots} * KV, 71)), vc = device_floats(*ctx, random_floats(size_t{slots} * KV, 72));
    auto sinks = device_floats(*ctx, random_floats(64, 73));
    auto out = device_floats(*ctx, std::vector<float>(size_t{T} * Q));
    auto pstep = device_words(*ctx, {position - T, T, 0u, 0u});
    for (const uint32_t cache : {vk::abi::ENC_F32, vk::abi::ENC_F16})
      for (uint32_t window : {0u, 128u}) {
        if (window && position != 4096u + T) continue;
        const vk::Kernels::AttentionShape shape{64, 8, 64, window, slots, 0.125f, cache};
        double us = bench.time([&](vk::DispatchList& l, uint32_t) {
          kernels.attention_prefill(l, shape, qkv->address(), kc->address(), vc->address(), sinks->address(),
                                    pstep->address(), out->address(), T);
        });
        const double keys = window ? 128.0 : position - T / 2.0;  // average keys per query
        report(("attention prefill " + std::to_string(T) + (cache == vk::abi::ENC_F16 ? " f16" : "") + " @" +
                std::to_string(position) + (window ? " window 128" : " full"))
                   .c_str(),
               us, 4.0 * T * 64 * 64 * keys, 0);
      }
  }
  // ---- floor (section floor): each decode kernel's bytes read by a kernel that only reads them,
  // in a sweep of workgroup counts (one to sixteen per multiprocessor), rotated over copies larger
  // than the L2: what the memory system gives a dispatch of that size in a chain, against which
  // the kernel's own time in the decode section is set ----
  if (timed("floor")) {
    const uint64_t largest = 18u << 20;  // bytes of each half (a, b) of the largest read below
    std::vector<std::unique_ptr<vk::Buffer>> halves_a, halves_b;
    for (uint32_t i = 0; i < 8; ++i) {
      halves_a.push_back(device_floats(*ctx, random_floats(largest / 4, 80 + 2 * i)));
      halves_b.push_back(device_floats(*ctx, random_floats(largest / 4, 81 + 2 * i)));
    }
    const uint32_t sms = std::max<uint32_t>(1, ctx->info().multiprocessors);
    const struct {
      const char* what;
      double bytes;
    } reads[] = {{"matvec out Q8_0", dense_bytes(DType::Q8_0, H, Q)},
                 {"matvec qkv Q8_0", dense_bytes(DType::Q8_0, Q + 2 * KV, H)},
                 {"expert_mlp2 (4 experts)", mlp2_bytes},
                 {"matvec out BF16", dense_bytes(DType::BF16, H, Q)},
                 {"matvec qkv BF16", dense_bytes(DType::BF16, Q + 2 * KV, H)},
                 {"expert_mlp1 (4 experts)", mlp1_bytes}};
    for (const auto& read : reads) {
      const uint32_t quads = static_cast<uint32_t>(read.bytes / 32);  // per half
      for (const uint32_t per_sm : {1u, 2u, 4u, 8u, 16u}) {
        const double us = stream->time(bench, halves_a, halves_b, quads, per_sm * sms);
        report(("floor: " + std::string(read.what) + ", " + std::to_string(per_sm) + "/SM").c_str(), us, 0,
               32.0 * quads);
      }
    }
  }
  // ---- mma (section mma): per dispatch, `per_sm` workgroups of 4 subgroups per multiprocessor
  // (so per_sm subgroups on each of its four schedulers), each subgroup `steps` rounds of `chains`
  // products. A round's time is one product's latency where a scheduler's chains are fewer than
  // the products it can have in flight, and chains x per_sm products' issue time beyond that ----
  if (timed("mma") && kernels.cooperative()) {
    struct Push {
      uint64_t sink;
      uint32_t steps;
    };
    auto sink = device_floats(*ctx, {0.0f});
    const uint32_t sms = std::max<uint32_t>(1, ctx->info().multiprocessors), steps = 4096;
    const auto listed = ctx->cooperative_products();
    std::printf("cooperative products the device lists (subgroup scope):\n");
    for (const auto& p : listed)
      std::printf("  %s %ux%ux%u %s x %s + %s -> %s\n", p.khr ? "KHR" : "NV ", p.m, p.n, p.k, p.a.c_str(), p.b.c_str(),
                  p.c.c_str(), p.result.c_str());
    const auto lists = [&](bool khr, uint32_t depth, const char* in, const char* out) {
      return std::find(listed.begin(), listed.end(), vk::CooperativeProduct{khr, 16, 16, depth, in, in, out, out}) != listed.end();
    };
    // The f16 product in the NV form and the KHR form (the engine's default where listed); the
    // signed 8-bit one (16 x 16 x 32 into 32-bit sums) in each form that lists it.
    struct Form {
      const char* shader;
      const char* what;
      uint32_t k;
    };
    std::vector<Form> forms{{"coop_mma", "mma NV", 16}};
    if (ctx->info().cooperative_matrix_khr) forms.push_back({"coop_mma_khr", "mma KHR", 16});
    if (ctx->info().int8 && lists(false, 32, "s8", "s32")) forms.push_back({"coop_mma_int8", "mma NV s8", 32});
    if (ctx->info().int8 && lists(true, 32, "s8", "s32")) forms.push_back({"coop_mma_int8_khr", "mma KHR s8", 32});
    for (const auto& form : forms)
    for (const bool load_each : {false, true})
      for (const uint32_t chains : {1u, 2u, 4u, 8u})
        for (const uint32_t per_sm : {1u, 2u, 4u}) {
          const uint32_t specialization[] = {chains, load_each ? 1u : 0u};
          const vk::Pipeline pipeline(*ctx, form.shader, gptoss::test::test_shader_registry().at(form.shader), sizeof(Push),
                                      specialization);
          const double us = bench.time([&](vk::DispatchList& l, uint32_t) {
            l.dispatch(pipeline, Push{sink->address(), steps}, per_sm * sms);
          });
          const double products = double{steps} * chains * 4 * per_sm * sms;
          char name[96];
          std::snprintf(name, sizeof name, "%s %s, %u chains x %u/scheduler: %.1f ns a round", form.what,
                        load_each ? "loads+product" : "product", chains, per_sm, us * 1e3 / steps);
          report(name, us, products * 2 * 16 * 16 * form.k, 0);  // operations (f16 flops or int8 ops)
        }
  }
  const auto stats = kernels.pipeline_statistics();
  if (ctx->captures_pipeline_statistics()) std::printf("\npipeline statistics:\n%s", stats.c_str());
  return 0;
}
