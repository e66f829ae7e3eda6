// Reading the collectives' replica_groups in every spelling XLA writes: a list {{0,1},{2,3}},
// an iota list [G,S]<=[dims]T(perm) and a Shardy mesh mesh['x'=2,'y'=2] {'y'}; and the small
// reader over an attribute's verbatim text that the collectives' other attributes use too.
// In the IR layer so that the verifier refuses groups it cannot read (as XLA's parser does),
// and the evaluator reads the same groups it verified.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "insitu/ir/instruction.h"
#include "insitu/support/status.h"

namespace insitu {

// A small reader over an attribute's verbatim text; its errors are located at the instruction.
class AttributeReader {
 public:
  AttributeReader(const Instruction& instruction, std::string_view key, std::string_view text)
      : instruction_(instruction), key_(key), text_(text) {}

  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool eat(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool eat(std::string_view word) {
    skip_space();
    if (text_.substr(at_, word.size()) == word) {
      at_ += word.size();
      return true;
    }
    return false;
  }
  bool done() {
    skip_space();
    return at_ == text_.size();
  }
  char peek() {
    skip_space();
    return at_ < text_.size() ? text_[at_] : '\0';
  }
  StatusOr<int64_t> integer() {
    skip_space();
    size_t end = at_;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    if (end == at_) return error("a number");
    const int64_t value = std::stoll(std::string(text_.substr(at_, end - at_)));
    at_ = end;
    return value;
  }
  // '{' n, n, ... '}' or '[' ... ']' (by the opener given).
  StatusOr<std::vector<int64_t>> integers(char open, char close) {
    std::vector<int64_t> values;
    if (!eat(open)) return error(std::string(1, open));
    if (eat(close)) return values;
    do {
      INSITU_ASSIGN_OR_RETURN(int64_t value, integer());
      values.push_back(value);
    } while (eat(','));
    if (!eat(close)) return error(std::string(1, close));
    return values;
  }
  StatusOr<std::string> quoted() {
    skip_space();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return error("a quoted axis name");
    const char quote = text_[at_];
    const size_t end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos) return error("the closing quote");
    std::string name(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return name;
  }
  // "OPCODE %name: KEY=TEXT: expected EXPECTED at offset N", at the instruction.
  Status error(std::string_view expected) const;

 private:
  const Instruction& instruction_;
  std::string_view key_;
  std::string_view text_;
  size_t at_ = 0;
};

// The groups replica_groups lists (empty when it is absent or written {}), or a located error
// for text that is not one of XLA's spellings (a mesh axis that does not exist, sub-axes and
// explicit device_ids, which insitu does not read yet).
StatusOr<std::vector<std::vector<int64_t>>> read_replica_groups(const Instruction& instruction);

}  // namespace insitu
