#include "runtime/eval/evaluation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "formats/core/zstd_frames.h"
#include "formats/core/parallel_for.h"

namespace gptoss::eval {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void check_request(const EvaluationRequest& r, uint32_t reference_vocab) {
  if ((r.reference == nullptr) == (r.reference_file == nullptr))
    throw std::invalid_argument("evaluate: give exactly one reference (an engine or a reference logits file)");
  if (r.save && !r.reference) throw std::invalid_argument("evaluate: saving needs a reference run live");
  if (r.chunks_per_forward == 0) throw std::invalid_argument("evaluate: 0 chunks per forward");
  if (r.tokens.size() < r.plan.evaluated_tokens())
    throw std::invalid_argument("evaluate: " + std::to_string(r.tokens.size()) + " tokens for " +
                                std::to_string(r.plan.chunks) + " chunks of " + std::to_string(r.plan.ctx));
  std::vector<const runtime::Engine*> engines(r.candidates.begin(), r.candidates.end());
  if (r.reference) engines.push_back(r.reference);
  if (r.floor) engines.push_back(r.floor);
  std::sort(engines.begin(), engines.end());
  if (std::adjacent_find(engines.begin(), engines.end()) != engines.end())
    throw std::invalid_argument("evaluate: one engine given twice (each model needs its own: their forwards may overlap)");
  std::vector<uint32_t> vocabs = {reference_vocab};
  for (const auto* c : r.candidates) vocabs.push_back(c->vocab_size());
  if (r.floor) {
    vocabs.push_back(r.floor->vocab_size());
    if (r.floor_chunks == 0) throw std::invalid_argument("evaluate: a noise floor over 0 chunks");
  }
  const uint32_t smallest = *std::min_element(vocabs.begin(), vocabs.end());
  for (uint64_t i = 0; i < r.plan.evaluated_tokens(); ++i)
    if (r.tokens[i] >= smallest)
      throw std::invalid_argument("token " + std::to_string(r.tokens[i]) + " at position " + std::to_string(i) +
                                  " of the text is outside a model's vocabulary of " + std::to_string(smallest) + " rows");
}

// One model's logits of a group of chunks, in the engine's logit memory (Engine::logit_memory: the
// Vulkan engine's GEMM writes the rows there, with no host copy between a model's forwards), taken
// once at the first group's size: a group's scored rows at the real vocabulary are hundreds of MB
// per model (4 chunks of 512: 820 MB).
class LogitBuffer {
 public:
  std::span<float> take(runtime::Engine& engine, size_t floats) {
    if (floats > memory_.values().size()) {
      memory_ = runtime::LogitMemory();  // the old memory first
      memory_ = engine.logit_memory(floats);
    }
    size_ = floats;
    return memory_.values().first(floats);
  }
  std::span<const float> values() const { return memory_.values().first(size_); }

 private:
  runtime::LogitMemory memory_;
  size_t size_ = 0;
};

// One group of chunks' forwards: the logits of each chunk's scored rows only
// (LogitRows::range(first_scored, scored): [chunks, scored, vocab] per model), or the reference's
// records from a file. Two of these alternate, so the buffers keep their memory from group to group.
struct GroupLogits {
  LogitBuffer reference;                       // live
  std::vector<ZstdFrameReader::Frame> frames;  // from a file: one per scored position
  std::vector<LogitBuffer> candidates;
};

}  // namespace

EvaluationResult evaluate(const EvaluationRequest& r) {
  const auto start = Clock::now();
  const uint32_t ref_vocab = r.reference ? r.reference->vocab_size() : r.reference_file->header().vocab_size;
  check_request(r, ref_vocab);
  const ChunkPlan& plan = r.plan;
  const uint32_t scored = plan.scored_per_chunk();
  const uint64_t total_scored = plan.scored_tokens();

  EvaluationResult result;
  result.reference_vocab = ref_vocab;
  result.chunks_per_forward = r.chunks_per_forward;
  // The compared engines: the candidates, then the floor (its first floor_chunks chunks only).
  std::vector<runtime::Engine*> compared = r.candidates;
  if (r.floor) compared.push_back(r.floor);
  const uint32_t floor_chunks = std::min(r.floor_chunks, plan.chunks);
  const auto runs_chunk = [&](size_t k, uint32_t chunk) { return k < r.candidates.size() || chunk < floor_chunks; };
  std::vector<double> ref_nll(total_scored);
  std::vector<std::vector<double>> cand_nll;
  std::vector<CandidateResult> results;
  for (size_t k = 0; k < compared.size(); ++k) {
    CandidateResult cr;
    cr.vocab_size = compared[k]->vocab_size();
    cr.shared_rows = std::min(ref_vocab, cr.vocab_size);
    const uint64_t positions = k < r.candidates.size() ? total_scored : uint64_t{floor_chunks} * scored;
    cr.positions.resize(positions);
    cand_nll.emplace_back(positions);
    results.push_back(std::move(cr));
  }
  std::vector<std::vector<uint8_t>> saved_frames(r.save ? scored : 0);

  const runtime::LogitRows scored_rows = runtime::LogitRows::range(plan.first_scored(), scored);
  GroupLogits buffers[2];
  for (auto& b : buffers) b.candidates.resize(compared.size());
  const uint32_t per_forward = r.chunks_per_forward;
  const uint32_t groups = (plan.chunks + per_forward - 1) / per_forward;
  const auto group_chunks = [&](uint32_t group) { return std::min(per_forward, plan.chunks - group * per_forward); };
  // Of group `group`'s chunks, how many compared engine k runs: those runs_chunk says, a prefix of
  // the group (the floor's chunks are the text's first).
  const auto chunks_run = [&](size_t k, uint32_t group) {
    uint32_t n = 0;
    while (n < group_chunks(group) && runs_chunk(k, group * per_forward + n)) ++n;
    return n;
  };

  // The forwards run in lanes, each on a thread of its own and each taking the groups in order:
  // every engine on the device is a lane, and the engines on the host, with the reference file's
  // reading, are one (each host engine uses every core, so they go one after the other). A lane
  // starts group i + 1 when it has finished group i and this thread has reduced group i - 1 (two
  // sets of buffers, used in turn), so the lanes overlap each other and the reduction. Engines
  // made through one runtime::SharedDevices share the device's queue: the GPU runs one model's
  // forward while another copies its logits to the host. Each engine (and the file's frame index)
  // is only ever used by its lane's thread, and the reduction of every position is the same
  // whichever lane finished first, so the results are those of running the chunks one after the
  // other.
  const auto on_device = [](const runtime::Engine* e) { return e->kind() == runtime::EngineKind::Vulkan; };
  struct Lane {
    bool reference = false;       // the reference: its engine, or its file's frames
    std::vector<size_t> engines;  // compared engines, by index
  };
  std::vector<Lane> lanes(1);  // lanes[0]: the host's
  if (r.reference && on_device(r.reference))
    lanes.push_back({true, {}});
  else
    lanes[0].reference = true;
  for (size_t k = 0; k < compared.size(); ++k) {
    if (on_device(compared[k]))
      lanes.push_back({false, {k}});
    else
      lanes[0].engines.push_back(k);
  }
  if (!lanes[0].reference && lanes[0].engines.empty()) lanes.erase(lanes.begin());

  auto run_lane = [&r, &plan, &compared, &chunks_run, &group_chunks, per_forward, scored, scored_rows](
                      const Lane& lane, uint32_t group, GroupLogits& out) {
    const uint32_t n = group_chunks(group);
    const auto ids = r.tokens.subspan(uint64_t{group} * per_forward * plan.ctx, uint64_t{n} * plan.ctx);
    if (lane.reference && r.reference) {
      const size_t floats = size_t{n} * scored * r.reference->vocab_size();
      r.reference->forward_sequences(ids, n, scored_rows, out.reference.take(*r.reference, floats));
    } else if (lane.reference) {
      out.frames.clear();
      for (uint32_t c = 0; c < n; ++c) {
        const auto frames = r.reference_file->next_chunk();
        out.frames.insert(out.frames.end(), frames.begin(), frames.end());
      }
    }
    for (const size_t k : lane.engines) {
      const uint32_t runs = chunks_run(k, group);
      if (runs == 0) continue;
      const size_t floats = size_t{runs} * scored * compared[k]->vocab_size();
      compared[k]->forward_sequences(ids.first(uint64_t{runs} * plan.ctx), runs, scored_rows,
                                     out.candidates[k].take(*compared[k], floats));
    }
  };
  // When some lane ran a forward: the union of the lanes' intervals is forward_seconds.
  std::mutex intervals_mutex;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> intervals;
  // Declared after the buffers: destroyed (waited for) first when a lane or a reduction throws.
  std::vector<std::shared_future<void>> latest(lanes.size());  // each lane's latest group
  const auto launch = [&](uint32_t group) {
    for (size_t i = 0; i < lanes.size(); ++i)
      latest[i] = std::async(std::launch::async, [&, i, group, before = latest[i]] {
                    leave_signals_to_the_main_thread();
                    if (before.valid()) before.get();  // the lane's previous group (and its error)
                    const auto begin = Clock::now();
                    run_lane(lanes[i], group, buffers[group % 2]);
                    std::lock_guard lock(intervals_mutex);
                    intervals.emplace_back(begin, Clock::now());
                  }).share();
  };
  if (groups > 0) launch(0);
  for (uint32_t group = 0; group < groups; ++group) {
    const auto current = latest;  // group `group`'s
    if (group + 1 < groups) launch(group + 1);
    for (const auto& lane : current) lane.get();
    const GroupLogits& logits = buffers[group % 2];
    for (uint32_t in_group = 0; in_group < group_chunks(group); ++in_group) {
      const uint32_t chunk = group * per_forward + in_group;
      const auto ids = r.tokens.subspan(uint64_t{chunk} * plan.ctx, plan.ctx);
      const auto stats_start = Clock::now();
      const uint64_t first_global = uint64_t{chunk} * scored;
      parallel_for(scored, r.threads, [&](size_t j) {
        const size_t row = plan.first_scored() + j;
        const uint32_t target = ids[row + 1];
        const uint64_t global = first_global + j;
        thread_local std::vector<uint8_t> raw;
        thread_local std::vector<float> decoded;
        std::span<const float> x;
        std::optional<ReferenceRecord> record;
        const size_t at = size_t{in_group} * scored + j;  // the row among the group's
        if (r.reference) {
          x = logits.reference.values().subspan(at * ref_vocab, ref_vocab);
        } else {
          decoded.resize(ref_vocab);
          record = r.reference_file->decode(logits.frames[at], raw, decoded);
          x = record->relative_log_probs;
        }
        std::optional<RowSummary> ref_summary;
        auto ref_full = [&]() -> const RowSummary& {
          if (!ref_summary) ref_summary = summarize_row(x);
          return *ref_summary;
        };
        if (r.save) saved_frames[j] = zstd_compress_frame(encode_reference_record(x, ref_full(), target), r.save->level());
        std::optional<double> nll;
        if (record) nll = record->nll;
        for (size_t k = 0; k < compared.size(); ++k) {
          if (!runs_chunk(k, chunk)) continue;
          CandidateResult& cr = results[k];
          const auto y = logits.candidates[k].values().subspan(at * cr.vocab_size, cr.vocab_size);
          PositionComparison c = compare_position(x.first(cr.shared_rows), y.first(cr.shared_rows));
          if (record && record->top < cr.shared_rows) {
            // The file's top and log P(top) are exact (the f16 row is not): the argmax over every row
            // lies in the shared ones, so it is theirs too, with P renormalized over them.
            double shared_mass = 1;
            if (cr.shared_rows < ref_vocab) {
              double tail = 0;
              for (size_t i = cr.shared_rows; i < ref_vocab; ++i) tail += std::exp(x[i] - ref_full().log_norm);
              shared_mass = 1 - tail;
            }
            c.ref_top = record->top;
            c.p_ref_top = std::exp(record->log_p_top) / shared_mass;
            c.q_ref_top = std::exp(static_cast<double>(y[c.ref_top]) - c.cand_log_norm);
          }
          cr.positions[global] = c;
          const double cand_log_norm = cr.shared_rows == cr.vocab_size ? c.cand_log_norm : summarize_row(y).log_norm;
          cand_nll[k][global] = cand_log_norm - y[target];
          if (!nll && cr.shared_rows == ref_vocab) nll = c.ref_log_norm - x[target];
        }
        ref_nll[global] = nll ? *nll : ref_full().log_norm - x[target];
      });
      if (r.save)
        for (auto& frame : saved_frames) r.save->write_frame(frame);
      result.statistics_seconds += seconds_since(stats_start);
      if (r.progress) r.progress(uint64_t{chunk + 1} * plan.ctx, plan.evaluated_tokens());
    }
  }
  if (r.reference_file) r.reference_file->expect_end();
  std::sort(intervals.begin(), intervals.end());
  for (size_t i = 0; i < intervals.size();) {
    auto [begin, end] = intervals[i];
    for (++i; i < intervals.size() && intervals[i].first <= end; ++i) end = std::max(end, intervals[i].second);
    result.forward_seconds += std::chrono::duration<double>(end - begin).count();
  }
  for (double v : ref_nll) result.reference.add(v);
  for (size_t k = 0; k < compared.size(); ++k)
    for (double v : cand_nll[k]) results[k].nll.add(v);
  if (r.floor) {
    result.floor = std::move(results.back());
    results.pop_back();
  }
  result.candidates = std::move(results);
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace gptoss::eval
