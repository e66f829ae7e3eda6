// Lexer for XLA's HLO text: turns the whole input into tokens with line:column positions.
//
// Tokens keep their byte range in the source so the parser can hand back the exact text of a
// value it does not model (backend_config, sharding, unknown attributes). Identifiers follow
// XLA's rules ([a-zA-Z_][a-zA-Z0-9_.-]*, `%` optional on names), numbers are lexed loosely
// (`1`, `-2.5e-3`, `0x1p-3`, `-inf`, `2x3`, `0_0x1_2_1`) and interpreted by the parser where it
// knows what kind of number it expects. Comments (`//...`, `/*...*/`) are skipped. Bad input
// becomes a kError token (or kOther for stray punctuation); lexing never fails as a whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "insitu/support/status.h"

namespace insitu {

enum class TokenKind : uint8_t {
  kEof,
  kError,       // text holds the message
  kIdent,       // foo, f32, custom-call, may-alias, ENTRY
  kName,        // %foo (text without the %)
  kNumber,      // 12, -3, 1.5e-3, 0x1F, -inf, 2x3, 0_0x1_1 (loose; parser interprets)
  kString,      // "..." (text unescaped)
  kLbrace, kRbrace, kLparen, kRparen, kLsquare, kRsquare,
  kComma, kColon, kEqual, kArrow /* -> */, kLeq /* <= */, kStar, kQuestion, kHash,
  kDots,        // ...
  kOther,       // any other printable punctuation (<, >, @, ...): text holds it
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;
  size_t begin = 0;  // byte range in the source
  size_t end = 0;
  SourceLocation location;
};

// Lexes all of `source`; the last token is always kEof.
std::vector<Token> lex_hlo(std::string_view source);

// A short human description for messages: "'{'", "identifier 'foo'", "end of file".
std::string describe_token(const Token& token);

}  // namespace insitu
