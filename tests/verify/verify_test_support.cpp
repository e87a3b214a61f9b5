#include "tests/verify/verify_test_support.h"

#include "convert/model_io.h"
#include "tests/test_support.h"

namespace gptoss::test {

const Finding* find_finding(const Report& report, const std::string& check, const std::string& item_part) {
  for (const auto& f : report.findings())
    if (f.severity != Severity::Info && f.check == check && f.item.find(item_part) != std::string::npos) return &f;
  return nullptr;
}

size_t count_verdict(const ModelComparison& comparison, Verdict verdict) {
  size_t n = 0;
  for (const auto& t : comparison.tensors) n += t.verdict == verdict;
  return n;
}

const TensorComparison* find_comparison(const ModelComparison& comparison, const std::string& name) {
  for (const auto& t : comparison.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const CanonicalModel& preset_a_model() {
  static const CanonicalModel model = load_model(preset_a_checkpoint() / "hf");
  return model;
}

std::vector<uint8_t> tensor_bytes(const CanonicalModel& model, const std::string& name) {
  const auto* t = model.find(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? read_all(*t->source) : std::vector<uint8_t>{};
}

CanonicalModel with_tensor_bytes(const CanonicalModel& model, const std::string& name, std::vector<uint8_t> bytes,
                                 std::optional<DType> dtype) {
  CanonicalModel out = model;
  for (auto& t : out.tensors)
    if (t.spec.name == name) {
      t.source = std::make_shared<OwnedSource>(std::move(bytes));
      if (dtype) t.dtype = *dtype;
      return out;
    }
  ADD_FAILURE() << "no tensor " << name;
  return out;
}

}  // namespace gptoss::test
