// The matcher behind the golden tests (see file_check.h for the directive semantics).
#include "file_check.h"

#include <algorithm>
#include <optional>
#include <regex>
#include <sstream>

namespace insitu::golden {
namespace {

std::string escape_regex(char c) {
  static const std::string_view kSpecial = "\\^$.|?*+()[]{}/";
  return kSpecial.find(c) == std::string_view::npos ? std::string(1, c) : std::string("\\") + c;
}

// Capturing groups in a user regex: '(' not escaped, not "(?", not inside [...].
int count_groups(std::string_view regex) {
  int groups = 0;
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    char c = regex[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(' && (i + 1 >= regex.size() || regex[i + 1] != '?')) {
      ++groups;
    }
  }
  return groups;
}

// The "]]" closing a [[...]] that starts at `from`, skipping character classes in its regex
// ("[[N:p[0-9]]]" ends at the last "]]").
size_t find_variable_end(std::string_view pattern, size_t from) {
  int depth = 0;
  for (size_t i = from; i < pattern.size(); ++i) {
    if (pattern[i] == '\\') {
      ++i;
    } else if (depth == 0 && pattern.substr(i, 2) == "]]") {
      return i;
    } else if (pattern[i] == '[') {
      ++depth;
    } else if (pattern[i] == ']' && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A directive's pattern as a regex, plus the variables it defines (name -> group).
struct CompiledPattern {
  std::regex regex;
  std::vector<std::pair<std::string, int>> definitions;
};

std::optional<CompiledPattern> compile_pattern(const CheckDirective& directive,
                                               const std::map<std::string, std::string>& variables,
                                               std::string& error) {
  std::string_view pattern = trim(directive.pattern);
  std::string regex;
  CompiledPattern compiled;
  std::map<std::string, int> local;  // variables defined earlier in this same pattern
  int groups = 0;
  size_t i = 0;
  while (i < pattern.size()) {
    if (pattern.substr(i, 2) == "{{") {
      size_t end = pattern.find("}}", i + 2);
      if (end == std::string_view::npos) {
        error = "unterminated {{ in the pattern";
        return std::nullopt;
      }
      std::string_view user = pattern.substr(i + 2, end - i - 2);
      regex += "(?:" + std::string(user) + ")";
      groups += count_groups(user);
      i = end + 2;
    } else if (pattern.substr(i, 2) == "[[") {
      size_t end = find_variable_end(pattern, i + 2);
      if (end == std::string_view::npos) {
        error = "unterminated [[ in the pattern";
        return std::nullopt;
      }
      std::string_view body = pattern.substr(i + 2, end - i - 2);
      i = end + 2;
      if (body.substr(0, 5) == "@LINE") {
        int offset = 0;
        if (body.size() > 5) {
          try {
            offset = std::stoi(std::string(body.substr(6)));
          } catch (...) {
            error = "bad [[" + std::string(body) + "]]";
            return std::nullopt;
          }
          if (body[5] == '-') offset = -offset;
          else if (body[5] != '+') {
            error = "bad [[" + std::string(body) + "]]";
            return std::nullopt;
          }
        }
        regex += std::to_string(directive.line + offset);
        continue;
      }
      size_t colon = body.find(':');
      if (colon != std::string_view::npos) {
        std::string name(body.substr(0, colon));
        std::string_view user = body.substr(colon + 1);
        ++groups;
        local[name] = groups;
        compiled.definitions.emplace_back(name, groups);
        regex += "(" + std::string(user) + ")";
        groups += count_groups(user);
        continue;
      }
      std::string name(body);
      if (auto it = local.find(name); it != local.end()) {
        regex += "\\" + std::to_string(it->second);
      } else if (auto var = variables.find(name); var != variables.end()) {
        for (char c : var->second) regex += escape_regex(c);
      } else {
        error = "undefined variable [[" + name + "]]";
        return std::nullopt;
      }
    } else if (pattern[i] == ' ' || pattern[i] == '\t') {
      while (i < pattern.size() && (pattern[i] == ' ' || pattern[i] == '\t')) ++i;
      regex += "[ \\t]+";
    } else {
      regex += escape_regex(pattern[i++]);
    }
  }
  try {
    compiled.regex = std::regex(regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    error = std::string("invalid regular expression: ") + e.what();
    return std::nullopt;
  }
  return compiled;
}

struct Match {
  size_t begin = 0;
  size_t end = 0;
};

class Checker {
 public:
  Checker(std::string_view output, std::string_view file) : output_(output), file_(file) {}

  std::string run(const std::vector<CheckDirective>& checks) {
    // Labels first: they fix the block boundaries.
    std::vector<std::optional<Match>> label_matches(checks.size());
    size_t label_pos = 0;
    for (size_t k = 0; k < checks.size(); ++k) {
      if (checks[k].kind != CheckKind::kLabel) continue;
      std::optional<Match> match = find(checks[k], label_pos, output_.size());
      if (!error_.empty()) return error_;
      if (!match) return fail(checks[k], "expected string not found in input", label_pos);
      label_matches[k] = match;
      label_pos = match->end;
    }

    size_t pos = 0;
    bool have_match = false;
    size_t last_match_end = 0;
    std::vector<const CheckDirective*> pending_nots;
    for (size_t k = 0; k < checks.size(); ++k) {
      const CheckDirective& check = checks[k];
      size_t block_end = output_.size();
      for (size_t j = k + 1; j < checks.size(); ++j) {
        if (label_matches[j]) {
          block_end = label_matches[j]->begin;
          break;
        }
      }
      if (check.kind == CheckKind::kNot) {
        pending_nots.push_back(&check);
        continue;
      }
      std::optional<Match> match;
      if (check.kind == CheckKind::kLabel) {
        match = label_matches[k];
      } else {
        size_t limit = block_end;
        if (check.kind == CheckKind::kSame) {
          if (!have_match) return fail(check, "CHECK-SAME needs a previous match", pos);
          limit = std::min(limit, line_end(last_match_end));
        }
        if (check.kind == CheckKind::kNext && !have_match)
          return fail(check, "CHECK-NEXT needs a previous match", pos);
        match = find(check, pos, limit);
        if (!error_.empty()) return error_;
        if (!match) return fail(check, "expected string not found in input", pos);
        if (check.kind == CheckKind::kNext) {
          size_t next_line = line_end(last_match_end) + 1;
          if (match->begin < next_line || match->begin > line_end(next_line))
            return fail(check, "is not on the line after the previous match", match->begin);
        }
      }
      std::string not_error = check_nots(pending_nots, pos, match->begin);
      if (!not_error.empty()) return not_error;
      pending_nots.clear();
      pos = match->end;
      last_match_end = match->end;
      have_match = true;
    }
    return check_nots(pending_nots, pos, output_.size());
  }

 private:
  size_t line_end(size_t pos) const {
    size_t end = output_.find('\n', pos);
    return end == std::string_view::npos ? output_.size() : end;
  }

  std::optional<Match> find(const CheckDirective& check, size_t from, size_t limit) {
    std::optional<CompiledPattern> compiled = compile_pattern(check, variables_, error_);
    if (!compiled) {
      error_ = str(check, "bad pattern: " + error_);
      return std::nullopt;
    }
    if (from > limit) return std::nullopt;
    std::match_results<std::string_view::const_iterator> result;
    auto flags = from == 0 || output_[from - 1] == '\n' ? std::regex_constants::match_default
                                                        : std::regex_constants::match_prev_avail;
    if (!std::regex_search(output_.begin() + from, output_.begin() + limit, result, compiled->regex, flags))
      return std::nullopt;
    for (const auto& [name, group] : compiled->definitions) variables_[name] = result[group].str();
    size_t begin = from + result.position(0);
    return Match{begin, begin + result.length(0)};
  }

  std::string check_nots(const std::vector<const CheckDirective*>& nots, size_t from, size_t to) {
    for (const CheckDirective* check : nots) {
      std::optional<Match> match = find(*check, from, to);
      if (!error_.empty()) return error_;
      if (match) return fail(*check, "excluded string found in input", match->begin);
    }
    return "";
  }

  std::string str(const CheckDirective& check, const std::string& what) const {
    std::ostringstream out;
    out << file_ << ":" << check.line << ": error: " << check_kind_name(check.kind) << ": " << what << "\n"
        << "  " << check_kind_name(check.kind) << ": " << trim(check.pattern) << "\n";
    return out.str();
  }

  std::string fail(const CheckDirective& check, const std::string& what, size_t at) const {
    size_t line_start = output_.rfind('\n', at == 0 ? 0 : at - 1);
    line_start = at == 0 || line_start == std::string_view::npos ? 0 : line_start + 1;
    int line = 1 + static_cast<int>(std::count(output_.begin(), output_.begin() + line_start, '\n'));
    size_t excerpt_end = line_start;
    for (int n = 0; n < 3 && excerpt_end < output_.size(); ++n) excerpt_end = line_end(excerpt_end) + 1;
    std::ostringstream out;
    out << str(check, what) << "note: output line " << line << ", from here:\n"
        << output_.substr(line_start, std::min(excerpt_end, output_.size()) - line_start);
    return out.str();
  }

  std::string_view output_;
  std::string_view file_;
  std::map<std::string, std::string> variables_;
  std::string error_;
};

}  // namespace

namespace {
// The one table of directive names. Longer names first, so "CHECK-NEXT:" is not read as "CHECK".
constexpr std::pair<CheckKind, std::string_view> kKindNames[] = {
    {CheckKind::kNext, "CHECK-NEXT"}, {CheckKind::kSame, "CHECK-SAME"}, {CheckKind::kNot, "CHECK-NOT"},
    {CheckKind::kLabel, "CHECK-LABEL"}, {CheckKind::kCheck, "CHECK"}};
}  // namespace

std::string_view check_kind_name(CheckKind kind) {
  for (const auto& [k, name] : kKindNames)
    if (k == kind) return name;
  return "CHECK";
}

std::optional<CheckDirective> parse_check_directive(std::string_view text, int line) {
  for (const auto& [kind, name] : kKindNames) {
    if (text.substr(0, name.size()) != name || text.substr(name.size(), 1) != ":") continue;
    return CheckDirective{kind, std::string(text.substr(name.size() + 1)), line};
  }
  return std::nullopt;
}

std::string match_checks(std::string_view output, const std::vector<CheckDirective>& checks,
                         std::string_view check_file) {
  return Checker(output, check_file).run(checks);
}

}  // namespace insitu::golden
