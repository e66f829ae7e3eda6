// Pass: a named module transformation. The algorithm is a free function in its own file; the
// Pass object is a thin wrapper so the pipeline can name, time, dump and verify around it.
#pragma once

#include <memory>
#include <string_view>

#include "insitu/ir/module.h"

namespace insitu {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;        // kebab-case: "copy-insertion"
  virtual StatusOr<bool> run(Module& module) = 0;   // true iff the module changed
};

// Wraps a free function `StatusOr<bool> fn(Module&)` as a Pass.
template <typename Fn>
class FunctionPass final : public Pass {
 public:
  FunctionPass(std::string_view name, Fn fn) : name_(name), fn_(std::move(fn)) {}
  std::string_view name() const override { return name_; }
  StatusOr<bool> run(Module& module) override { return fn_(module); }

 private:
  std::string_view name_;
  Fn fn_;
};

template <typename Fn>
std::unique_ptr<Pass> make_pass(std::string_view name, Fn fn) {
  return std::make_unique<FunctionPass<Fn>>(name, std::move(fn));
}

}  // namespace insitu
