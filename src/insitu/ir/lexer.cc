// HLO text lexer; see lexer.h.
#include "insitu/ir/lexer.h"

#include <cctype>

#include "insitu/support/str.h"

namespace insitu {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(source) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      skip_whitespace_and_comments(tokens);
      Token token = lex_one();
      bool done = token.kind == TokenKind::kEof;
      tokens.push_back(std::move(token));
      if (done) break;
    }
    return tokens;
  }

 private:
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < source_.size() ? source_[pos_ + ahead] : '\0';
  }
  bool at_end() const { return pos_ >= source_.size(); }
  void advance() {
    if (at_end()) return;
    if (source_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  Token start_token(TokenKind kind) {
    Token token;
    token.kind = kind;
    token.begin = pos_;
    token.location = {line_, column_};
    return token;
  }
  Token finish(Token token) {
    token.end = pos_;
    return token;
  }
  Token error(Token token, std::string message) {
    token.kind = TokenKind::kError;
    token.text = std::move(message);
    return finish(std::move(token));
  }

  void skip_whitespace_and_comments(std::vector<Token>& tokens) {
    while (!at_end()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (!at_end() && peek() != '\n') advance();
      } else if (c == '/' && peek(1) == '*') {
        Token token = start_token(TokenKind::kError);
        advance();
        advance();
        while (!at_end() && !(peek() == '*' && peek(1) == '/')) advance();
        if (at_end()) {
          tokens.push_back(error(std::move(token), "unterminated /* comment"));
          return;
        }
        advance();
        advance();
      } else {
        return;
      }
    }
  }

  Token lex_one() {
    Token token = start_token(TokenKind::kEof);
    if (at_end()) return finish(std::move(token));
    char c = peek();
    auto single = [&](TokenKind kind) {
      token.kind = kind;
      advance();
      return finish(std::move(token));
    };
    switch (c) {
      case '{': return single(TokenKind::kLbrace);
      case '}': return single(TokenKind::kRbrace);
      case '(': return single(TokenKind::kLparen);
      case ')': return single(TokenKind::kRparen);
      case '[': return single(TokenKind::kLsquare);
      case ']': return single(TokenKind::kRsquare);
      case ',': return single(TokenKind::kComma);
      case ':': return single(TokenKind::kColon);
      case '=': return single(TokenKind::kEqual);
      case '*': return single(TokenKind::kStar);
      case '?': return single(TokenKind::kQuestion);
      case '#': return single(TokenKind::kHash);
      case '"': return lex_string(std::move(token));
      default: break;
    }
    if (c == '<' && peek(1) == '=') {
      token.kind = TokenKind::kLeq;
      advance();
      advance();
      return finish(std::move(token));
    }
    if (c == '-' && peek(1) == '>') {
      token.kind = TokenKind::kArrow;
      advance();
      advance();
      return finish(std::move(token));
    }
    if (c == '.' && peek(1) == '.' && peek(2) == '.') {
      token.kind = TokenKind::kDots;
      advance();
      advance();
      advance();
      return finish(std::move(token));
    }
    if (c == '%') {
      advance();
      if (!is_ident_start(peek())) return error(std::move(token), "expected a name after '%'");
      token.kind = TokenKind::kName;
      lex_identifier_chars();
      token.text = std::string(source_.substr(token.begin + 1, pos_ - token.begin - 1));
      return finish(std::move(token));
    }
    if (is_ident_start(c)) {
      token.kind = TokenKind::kIdent;
      lex_identifier_chars();
      token.text = std::string(source_.substr(token.begin, pos_ - token.begin));
      return finish(std::move(token));
    }
    if (is_digit(c) || ((c == '-' || c == '.') && (is_digit(peek(1)) || peek(1) == '.')) ||
        (c == '-' && is_ident_start(peek(1)))) {
      token.kind = TokenKind::kNumber;
      advance();
      while (!at_end()) {
        char n = peek();
        char previous = source_[pos_ - 1];
        bool exponent_sign = (n == '+' || n == '-') && (previous == 'e' || previous == 'E' ||
                                                        previous == 'p' || previous == 'P');
        if (std::isalnum(static_cast<unsigned char>(n)) || n == '_' || n == '.' || exponent_sign) {
          advance();
        } else {
          break;
        }
      }
      token.text = std::string(source_.substr(token.begin, pos_ - token.begin));
      return finish(std::move(token));
    }
    advance();
    if (std::ispunct(static_cast<unsigned char>(c))) {
      token.kind = TokenKind::kOther;
      token.text = std::string(1, c);
      return finish(std::move(token));
    }
    return error(std::move(token), str_cat("unexpected character (byte ", static_cast<int>(static_cast<unsigned char>(c)), ")"));
  }

  // [a-zA-Z0-9_.-]*, but never swallowing the '-' of a following "->".
  void lex_identifier_chars() {
    while (!at_end() && is_ident_char(peek())) {
      if (peek() == '-' && peek(1) == '>') break;
      advance();
    }
  }

  Token lex_string(Token token) {
    token.kind = TokenKind::kString;
    advance();  // opening quote
    std::string value;
    while (true) {
      // A string may span lines (XLA's parser accepts it: backend_config JSON written out).
      if (at_end()) return error(std::move(token), "unterminated string");
      char c = peek();
      advance();
      if (c == '"') break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (at_end()) return error(std::move(token), "unterminated string");
      char e = peek();
      advance();
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'x': {
          int digits = 0, code = 0;
          while (digits < 2 && std::isxdigit(static_cast<unsigned char>(peek()))) {
            char h = peek();
            code = code * 16 + (is_digit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
            advance();
            ++digits;
          }
          if (digits == 0) return error(std::move(token), "bad \\x escape in string");
          value += static_cast<char>(code);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int code = e - '0', digits = 1;
            while (digits < 3 && peek() >= '0' && peek() <= '7') {
              code = code * 8 + (peek() - '0');
              advance();
              ++digits;
            }
            value += static_cast<char>(code & 0xff);
          } else {
            value += e;  // \\ \" \' \? and anything else: the character itself
          }
      }
    }
    token.text = std::move(value);
    return finish(std::move(token));
  }

  std::string_view source_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

std::vector<Token> lex_hlo(std::string_view source) { return Lexer(source).run(); }

std::string describe_token(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEof: return "end of file";
    case TokenKind::kError: return "invalid input (" + token.text + ")";
    case TokenKind::kIdent: return "'" + token.text + "'";
    case TokenKind::kName: return "'%" + token.text + "'";
    case TokenKind::kNumber: return "number " + token.text;
    case TokenKind::kString: return "a string";
    case TokenKind::kLbrace: return "'{'";
    case TokenKind::kRbrace: return "'}'";
    case TokenKind::kLparen: return "'('";
    case TokenKind::kRparen: return "')'";
    case TokenKind::kLsquare: return "'['";
    case TokenKind::kRsquare: return "']'";
    case TokenKind::kComma: return "','";
    case TokenKind::kColon: return "':'";
    case TokenKind::kEqual: return "'='";
    case TokenKind::kArrow: return "'->'";
    case TokenKind::kLeq: return "'<='";
    case TokenKind::kStar: return "'*'";
    case TokenKind::kQuestion: return "'?'";
    case TokenKind::kHash: return "'#'";
    case TokenKind::kDots: return "'...'";
    case TokenKind::kOther: return "'" + token.text + "'";
  }
  return "token";
}

}  // namespace insitu
