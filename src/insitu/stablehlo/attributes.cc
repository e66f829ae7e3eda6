// Builtin and VHLO attributes and types from their bytecode entries (attributes.h).
#include "insitu/stablehlo/attributes.h"

#include "insitu/support/str.h"

namespace insitu::stablehlo {
namespace {

using bytecode::Reader;

// VHLO type codes that are element types.
std::optional<PrimitiveType> vhlo_element_type(uint64_t code) {
  switch (code) {
    case 0: return PrimitiveType::kPred;
    case 2: return PrimitiveType::kBF16;
    case 3: return PrimitiveType::kF16;
    case 4: return PrimitiveType::kF32;
    case 5: return PrimitiveType::kF64;
    case 6: return PrimitiveType::kF8E4M3FN;
    case 7: return PrimitiveType::kF8E5M2;
    case 10: return PrimitiveType::kS4;
    case 11: return PrimitiveType::kS8;
    case 12: return PrimitiveType::kS16;
    case 13: return PrimitiveType::kS32;
    case 14: return PrimitiveType::kS64;
    case 15: return PrimitiveType::kU4;
    case 16: return PrimitiveType::kU8;
    case 17: return PrimitiveType::kU16;
    case 18: return PrimitiveType::kU32;
    case 19: return PrimitiveType::kU64;
    case 27: return PrimitiveType::kF8E4M3FNUZ;
    case 28: return PrimitiveType::kF8E5M2FNUZ;
    case 29: return PrimitiveType::kF8E4M3B11FNUZ;
    case 31: return PrimitiveType::kS2;
    case 32: return PrimitiveType::kU2;
    case 35: return PrimitiveType::kF8E4M3;
    case 36: return PrimitiveType::kF8E3M4;
    case 37: return PrimitiveType::kF4E2M1FN;
    case 40: return PrimitiveType::kF8E8M0FNU;
    default: return std::nullopt;
  }
}

// The names of VHLO types insitu has no element type for (so the error can say which).
std::string_view vhlo_type_name(uint64_t code) {
  switch (code) {
    case 24: return "uniform quantized";
    case 30: return "uniform quantized per axis";
    case 26: return "witness";
    case 34: return "tf32";
    case 38: return "f6E2M3FN";
    case 39: return "f6E3M2FN";
    case 41: return "ranked buffer";
    case 42: return "future";
    default: return "";
  }
}

// An APInt of `width` bits as the writer stores it: a raw byte up to 8 bits, a signed varint of
// the zero-extended value up to 64; wider values are not read.
StatusOr<uint64_t> read_apint(Reader& reader, int64_t width) {
  if (width <= 8) {
    INSITU_ASSIGN_OR_RETURN(uint8_t byte, reader.byte());
    return uint64_t{byte};
  }
  if (width <= 64) {
    INSITU_ASSIGN_OR_RETURN(int64_t value, reader.signed_varint());
    return static_cast<uint64_t>(value);
  }
  return reader.error(str_cat("an integer of ", width, " bits (insitu reads up to 64)"));
}

}  // namespace

std::vector<bool> unpack_booleans(std::span<const uint8_t> data, int64_t count) {
  std::vector<bool> bits;
  const int64_t bytes = static_cast<int64_t>(data.size());
  if (bytes == 1 && count > 1 && (data[0] == 0x00 || data[0] == 0xFF)) {  // a splat
    bits.assign(static_cast<size_t>(count), data[0] != 0);
  } else if (bytes == count && count > 8) {  // one byte each (older writers)
    for (int64_t i = 0; i < count; ++i) bits.push_back(data[i] != 0);
  } else if (bytes == (count + 7) / 8) {  // packed, least significant bit first
    for (int64_t i = 0; i < count; ++i) bits.push_back((data[i / 8] >> (i % 8)) & 1);
  } else if (bytes == count) {
    for (int64_t i = 0; i < count; ++i) bits.push_back(data[i] != 0);
  }
  return bits;
}

namespace {

// Sign-extends the low `width` bits.
int64_t sign_extend(uint64_t bits, int64_t width) {
  if (width >= 64) return static_cast<int64_t>(bits);
  const uint64_t sign = uint64_t{1} << (width - 1);
  const uint64_t value = bits & ((sign << 1) - 1);
  return static_cast<int64_t>((value ^ sign) - sign);
}

}  // namespace

Symbols::Symbols(const bytecode::File& file)
    : file_(file),
      attributes_(file.attributes.size()),
      types_(file.types.size()),
      attribute_busy_(file.attributes.size()),
      type_busy_(file.types.size()) {}

Symbols::Symbols(const bytecode::File& file, const std::vector<Attribute>& attributes, const std::vector<Type>& types)
    : Symbols(file) {
  for (size_t i = 0; i < attributes.size() && i < attributes_.size(); ++i) attributes_[i] = std::make_unique<Attribute>(attributes[i]);
  for (size_t i = 0; i < types.size() && i < types_.size(); ++i) types_[i] = std::make_unique<Type>(types[i]);
}

Status Symbols::attribute_error(uint64_t index, std::string message) const {
  const uint64_t offset = index < file_.attributes.size() ? file_.attributes[index].offset : 0;
  if (!file_.text.empty()) return bytecode::located(file_, offset, std::move(message));
  return bytecode::located(file_, offset, str_cat("attribute ", index, ": ", message));
}

Status Symbols::type_error(uint64_t index, std::string message) const {
  const uint64_t offset = index < file_.types.size() ? file_.types[index].offset : 0;
  if (!file_.text.empty()) return bytecode::located(file_, offset, std::move(message));
  return bytecode::located(file_, offset, str_cat("type ", index, ": ", message));
}

StatusOr<const Attribute*> Symbols::attribute(uint64_t index) {
  if (index >= attributes_.size())
    return invalid_argument(str_cat("attribute index ", index, " out of range (", attributes_.size(), ")"));
  if (attributes_[index] == nullptr) {
    if (attribute_busy_[index]) return attribute_error(index, "refers to itself");
    if (depth_ >= kMaxDepth) return attribute_error(index, str_cat("entries nested deeper than ", kMaxDepth));
    attribute_busy_[index] = true;
    ++depth_;
    StatusOr<Attribute> decoded = decode_attribute(index);
    --depth_;
    attribute_busy_[index] = false;
    if (!decoded.ok()) return decoded.status();
    attributes_[index] = std::make_unique<Attribute>(std::move(*decoded));
  }
  return attributes_[index].get();
}

StatusOr<const Type*> Symbols::type(uint64_t index) {
  if (index >= types_.size()) return invalid_argument(str_cat("type index ", index, " out of range (", types_.size(), ")"));
  if (types_[index] == nullptr) {
    if (type_busy_[index]) return type_error(index, "refers to itself");
    if (depth_ >= kMaxDepth) return type_error(index, str_cat("entries nested deeper than ", kMaxDepth));
    type_busy_[index] = true;
    ++depth_;
    StatusOr<Type> decoded = decode_type(index);
    --depth_;
    type_busy_[index] = false;
    if (!decoded.ok()) return decoded.status();
    types_[index] = std::make_unique<Type>(std::move(*decoded));
  }
  return types_[index].get();
}

StatusOr<Type> Symbols::decode_type(uint64_t index) {
  const bytecode::Entry& entry = file_.types[index];
  const std::string& dialect = file_.dialects[entry.dialect].name;
  Type type;
  if (!entry.custom) {
    type.description = str_cat(dialect, " type written as text: ",
                               std::string(entry.bytes.begin(), entry.bytes.end() - (entry.bytes.empty() ? 0 : 1)));
    return type;
  }
  Reader reader(entry.bytes, entry.offset);
  INSITU_ASSIGN_OR_RETURN(uint64_t code, reader.varint());
  auto list = [&](std::vector<uint64_t>& out) -> Status {
    INSITU_ASSIGN_OR_RETURN(uint64_t count, reader.count());
    for (uint64_t i = 0; i < count; ++i) {
      INSITU_ASSIGN_OR_RETURN(uint64_t element, reader.varint());
      out.push_back(element);
    }
    return ok_status();
  };
  auto shape = [&]() -> Status {
    INSITU_ASSIGN_OR_RETURN(uint64_t rank, reader.count());
    int64_t elements = 1;
    for (uint64_t i = 0; i < rank; ++i) {
      INSITU_ASSIGN_OR_RETURN(int64_t size, reader.signed_varint());
      if (size != Type::kDynamic && (size < 0 || __builtin_mul_overflow(elements, size, &elements) || elements > kMaxElements))
        return type_error(index, str_cat("a tensor of more than ", kMaxElements, " elements or a negative size"));
      type.dimensions.push_back(size);
    }
    INSITU_ASSIGN_OR_RETURN(uint64_t element, reader.varint());
    INSITU_ASSIGN_OR_RETURN(const Type* element_type, this->type(element));
    // index elements (custom calls' layouts) are stored as 64-bit integers
    if (element_type->kind == Type::Kind::kIndex) {
      type.element = PrimitiveType::kS64;
    } else if (element_type->kind == Type::Kind::kElement) {
      type.element = element_type->element;
    } else {
      return type_error(index, "a tensor whose element type is not a number type");
    }
    type.kind = Type::Kind::kTensor;
    return ok_status();
  };
  if (dialect == "vhlo") {
    if (std::optional<PrimitiveType> element = vhlo_element_type(code)) {
      type.kind = Type::Kind::kElement;
      type.element = *element;
    } else if (code == 1) {  // complex
      INSITU_ASSIGN_OR_RETURN(uint64_t part, reader.varint());
      INSITU_ASSIGN_OR_RETURN(const Type* component, this->type(part));
      type.kind = Type::Kind::kElement;
      if (component->kind == Type::Kind::kElement && component->element == PrimitiveType::kF32)
        type.element = PrimitiveType::kC64;
      else if (component->kind == Type::Kind::kElement && component->element == PrimitiveType::kF64)
        type.element = PrimitiveType::kC128;
      else
        return type_error(index, "a complex type of other than f32 or f64 parts");
    } else if (code == 8) {
      type.kind = Type::Kind::kFunction;
      INSITU_RETURN_IF_ERROR(list(type.inputs));
      INSITU_RETURN_IF_ERROR(list(type.outputs));
    } else if (code == 9) {
      type.kind = Type::Kind::kIndex;
    } else if (code == 20 || code == 21) {
      if (code == 21) {
        INSITU_ASSIGN_OR_RETURN(uint64_t encoding, reader.varint());
        type.encoding = encoding;
      }
      INSITU_RETURN_IF_ERROR(shape());
    } else if (code == 22) {
      type.kind = Type::Kind::kToken;
    } else if (code == 23) {
      type.kind = Type::Kind::kTuple;
      INSITU_RETURN_IF_ERROR(list(type.inputs));
    } else if (code == 25) {
      INSITU_ASSIGN_OR_RETURN(uint64_t element, reader.varint());
      INSITU_ASSIGN_OR_RETURN(const Type* element_type, this->type(element));
      type.kind = Type::Kind::kUnrankedTensor;
      type.element = element_type->element;
    } else if (code == 33) {
      type.kind = Type::Kind::kNone;
    } else {
      const std::string_view name = vhlo_type_name(code);
      type.description = name.empty() ? str_cat("vhlo type of unknown kind ", code) : str_cat("vhlo ", name, " type");
      return type;  // opaque: whoever needs it says so
    }
  } else if (dialect == "builtin") {
    switch (code) {
      case 0: {  // integer: width << 2 | signedness
        INSITU_ASSIGN_OR_RETURN(uint64_t width_and_sign, reader.varint());
        const uint64_t width = width_and_sign >> 2, sign = width_and_sign & 3;
        type.kind = Type::Kind::kElement;
        if (width == 1) type.element = PrimitiveType::kPred;
        else if (width == 8) type.element = sign == 2 ? PrimitiveType::kU8 : PrimitiveType::kS8;
        else if (width == 16) type.element = sign == 2 ? PrimitiveType::kU16 : PrimitiveType::kS16;
        else if (width == 32) type.element = sign == 2 ? PrimitiveType::kU32 : PrimitiveType::kS32;
        else if (width == 64) type.element = sign == 2 ? PrimitiveType::kU64 : PrimitiveType::kS64;
        else return type_error(index, str_cat("a builtin integer type of ", width, " bits"));
        break;
      }
      case 1: type.kind = Type::Kind::kIndex; break;
      case 2:
        type.kind = Type::Kind::kFunction;
        INSITU_RETURN_IF_ERROR(list(type.inputs));
        INSITU_RETURN_IF_ERROR(list(type.outputs));
        break;
      case 3: type.kind = Type::Kind::kElement, type.element = PrimitiveType::kBF16; break;
      case 4: type.kind = Type::Kind::kElement, type.element = PrimitiveType::kF16; break;
      case 5: type.kind = Type::Kind::kElement, type.element = PrimitiveType::kF32; break;
      case 6: type.kind = Type::Kind::kElement, type.element = PrimitiveType::kF64; break;
      case 12: type.kind = Type::Kind::kNone; break;
      case 13: INSITU_RETURN_IF_ERROR(shape()); break;
      case 15:
        type.kind = Type::Kind::kTuple;
        INSITU_RETURN_IF_ERROR(list(type.inputs));
        break;
      default:
        type.description = str_cat("builtin type of kind ", code);
        return type;
    }
  } else {
    type.description = str_cat(dialect, " type");
    return type;
  }
  if (!reader.done()) return type_error(index, "bytes left over after the type");
  return type;
}

StatusOr<Attribute> Symbols::decode_attribute(uint64_t index) {
  const bytecode::Entry& entry = file_.attributes[index];
  const std::string& dialect = file_.dialects[entry.dialect].name;
  Attribute attribute;
  if (!entry.custom) {
    attribute.description = str_cat(dialect, " attribute written as text: ",
                                    std::string(entry.bytes.begin(), entry.bytes.end() - (entry.bytes.empty() ? 0 : 1)));
    return attribute;
  }
  Reader reader(entry.bytes, entry.offset);
  INSITU_ASSIGN_OR_RETURN(uint64_t code, reader.varint());
  auto list = [&](std::vector<uint64_t>& out, int per_element) -> Status {
    INSITU_ASSIGN_OR_RETURN(uint64_t count, reader.count(per_element));
    for (uint64_t i = 0; i < count * per_element; ++i) {
      INSITU_ASSIGN_OR_RETURN(uint64_t element, reader.varint());
      out.push_back(element);
    }
    return ok_status();
  };
  auto signed_list = [&](std::vector<int64_t>& out) -> Status {
    INSITU_ASSIGN_OR_RETURN(uint64_t count, reader.count());
    for (uint64_t i = 0; i < count; ++i) {
      INSITU_ASSIGN_OR_RETURN(int64_t element, reader.signed_varint());
      out.push_back(element);
    }
    return ok_status();
  };
  auto string_at = [&](uint64_t string) -> StatusOr<std::string> {
    if (string >= file_.strings.size()) return attribute_error(index, str_cat("string index ", string, " out of range"));
    return file_.strings[string];
  };
  auto list_of = [&](Reader& from, int count, std::vector<uint64_t>& out) -> Status {
    for (int i = 0; i < count; ++i) {
      INSITU_ASSIGN_OR_RETURN(uint64_t element, from.varint());
      out.push_back(element);
    }
    return ok_status();
  };
  // an integer or float value of the type `type` (its width)
  auto number = [&](bool is_float) -> Status {
    INSITU_ASSIGN_OR_RETURN(attribute.type, reader.varint());
    INSITU_ASSIGN_OR_RETURN(const Type* type, this->type(attribute.type));
    int64_t width = 64;
    bool is_signed = false;
    if (type->kind == Type::Kind::kElement) {
      width = bit_width(type->element);
      if (type->element == PrimitiveType::kPred) width = 1;
      is_signed = is_signed_integral(type->element);
    } else if (type->kind != Type::Kind::kIndex) {
      return attribute_error(index, "a number whose type is not a number type");
    }
    INSITU_ASSIGN_OR_RETURN(attribute.bits, read_apint(reader, width));
    attribute.kind = is_float ? Attribute::Kind::kFloat : Attribute::Kind::kInteger;
    attribute.integer = is_signed || type->kind == Type::Kind::kIndex ? sign_extend(attribute.bits, width)
                                                                      : static_cast<int64_t>(attribute.bits);
    return ok_status();
  };
  if (dialect == "vhlo") {
    switch (code) {
      case 1: attribute.kind = Attribute::Kind::kArray; INSITU_RETURN_IF_ERROR(list(attribute.elements, 1)); break;
      case 2: {
        attribute.kind = Attribute::Kind::kBoolean;
        INSITU_ASSIGN_OR_RETURN(uint64_t value, reader.varint());
        attribute.integer = value != 0;
        break;
      }
      case kComparisonDirection: case kComparisonType: case kCustomCallApiVersion: case kFftType: case kPrecision:
      case kRngAlgorithm: case kRngDistribution: case kTranspose: case kResultAccuracyMode: {
        attribute.kind = Attribute::Kind::kEnum;
        attribute.code = code;
        INSITU_ASSIGN_OR_RETURN(uint64_t value, reader.varint());
        attribute.integer = static_cast<int64_t>(value);
        break;
      }
      case 6: attribute.kind = Attribute::Kind::kDictionary; INSITU_RETURN_IF_ERROR(list(attribute.elements, 2)); break;
      case 8: INSITU_RETURN_IF_ERROR(number(true)); break;
      case 9: INSITU_RETURN_IF_ERROR(number(false)); break;
      case 10: {
        attribute.kind = Attribute::Kind::kOutputOperandAlias;
        INSITU_RETURN_IF_ERROR(signed_list(attribute.output_index));
        INSITU_ASSIGN_OR_RETURN(attribute.integer, reader.signed_varint());
        INSITU_RETURN_IF_ERROR(signed_list(attribute.operand_index));
        break;
      }
      case 14: {
        attribute.kind = Attribute::Kind::kString;
        INSITU_ASSIGN_OR_RETURN(uint64_t string, reader.varint());
        INSITU_ASSIGN_OR_RETURN(attribute.text, string_at(string));
        break;
      }
      case 15: {
        attribute.kind = Attribute::Kind::kTensor;
        INSITU_ASSIGN_OR_RETURN(attribute.type, reader.varint());
        INSITU_ASSIGN_OR_RETURN(attribute.data, reader.blob());
        break;
      }
      case 17: {
        attribute.kind = Attribute::Kind::kType;
        INSITU_ASSIGN_OR_RETURN(attribute.type, reader.varint());
        break;
      }
      case 20: {  // atol and rtol as f64 bit patterns (signed varints), ulps, the mode's attribute
        attribute.kind = Attribute::Kind::kResultAccuracy;
        INSITU_ASSIGN_OR_RETURN(int64_t atol, reader.signed_varint());
        INSITU_ASSIGN_OR_RETURN(int64_t rtol, reader.signed_varint());
        INSITU_ASSIGN_OR_RETURN(int64_t ulps, reader.signed_varint());
        INSITU_ASSIGN_OR_RETURN(uint64_t mode, reader.varint());
        attribute.bits = static_cast<uint64_t>(atol);
        attribute.output_index = {rtol, ulps};
        attribute.elements = {mode};
        break;
      }
      case 18:
        attribute.kind = Attribute::Kind::kTypeExtensions;
        INSITU_RETURN_IF_ERROR(signed_list(attribute.output_index));
        break;
      default:
        attribute.description = str_cat("vhlo attribute of kind ", code);
        return attribute;
    }
  } else if (dialect == "builtin") {
    switch (code) {
      case 0: attribute.kind = Attribute::Kind::kArray; INSITU_RETURN_IF_ERROR(list(attribute.elements, 1)); break;
      case 1: attribute.kind = Attribute::Kind::kDictionary; INSITU_RETURN_IF_ERROR(list(attribute.elements, 2)); break;
      case 2: case 3: {
        attribute.kind = Attribute::Kind::kString;
        INSITU_ASSIGN_OR_RETURN(uint64_t string, reader.varint());
        INSITU_ASSIGN_OR_RETURN(attribute.text, string_at(string));
        if (code == 3) {
          INSITU_ASSIGN_OR_RETURN(attribute.type, reader.varint());
        }
        break;
      }
      case 4: case 5: {
        attribute.kind = Attribute::Kind::kSymbolRef;
        INSITU_ASSIGN_OR_RETURN(uint64_t root, reader.varint());
        INSITU_ASSIGN_OR_RETURN(attribute.text, string(root, "a symbol reference"));
        if (code == 5) INSITU_RETURN_IF_ERROR(list(attribute.elements, 1));
        break;
      }
      case 6: {
        attribute.kind = Attribute::Kind::kType;
        INSITU_ASSIGN_OR_RETURN(attribute.type, reader.varint());
        break;
      }
      case 7: attribute.kind = Attribute::Kind::kUnit; break;
      case 8: INSITU_RETURN_IF_ERROR(number(false)); break;
      case 9: INSITU_RETURN_IF_ERROR(number(true)); break;
      case 10: case 12: case 13: case 14: case 15: case 21: case 22: case 11: {
        // a location: a file and line (11, 22), or the locations it is made of (elements: a
        // call site's callee then caller, a fused location's parts, a name's child, a distinct
        // wrapper's target); what an error needs, not every field
        attribute.kind = Attribute::Kind::kLocation;
        if (code == 11 || code == 22) {
          INSITU_ASSIGN_OR_RETURN(uint64_t file, reader.varint());
          StatusOr<std::string> name = string(file, "a location's file");
          if (name.ok()) attribute.text = *name;
          if (!reader.done()) {
            if (code == 22) {
              INSITU_ASSIGN_OR_RETURN(uint64_t numbers, reader.count());
              if (numbers == 0) break;
            }
            INSITU_ASSIGN_OR_RETURN(uint64_t line, reader.varint());
            attribute.integer = static_cast<int64_t>(line);
          }
        } else if (code == 10) {
          INSITU_RETURN_IF_ERROR(list_of(reader, 2, attribute.elements));
        } else if (code == 12 || code == 13) {
          INSITU_RETURN_IF_ERROR(list(attribute.elements, 1));
        } else if (code == 14) {
          INSITU_ASSIGN_OR_RETURN(uint64_t name, reader.varint());
          (void)name;
          INSITU_RETURN_IF_ERROR(list_of(reader, 1, attribute.elements));
        } else if (code == 21) {
          INSITU_RETURN_IF_ERROR(list_of(reader, 1, attribute.elements));
        }
        return attribute;  // the rest of a location is not needed
      }
      default:
        attribute.description = str_cat("builtin attribute of kind ", code);
        return attribute;
    }
  } else {
    attribute.description = str_cat(dialect, " attribute");
    return attribute;
  }
  if (!reader.done()) return attribute_error(index, "bytes left over after the attribute");
  return attribute;
}

std::string Symbols::source_location(uint64_t index, int depth) {
  if (depth > 16) return "";
  StatusOr<const Attribute*> attribute = this->attribute(index);
  if (!attribute.ok() || (*attribute)->kind != Attribute::Kind::kLocation) return "";
  if (!(*attribute)->text.empty())
    return (*attribute)->integer > 0 ? str_cat((*attribute)->text, ":", (*attribute)->integer) : (*attribute)->text;
  for (uint64_t element : (*attribute)->elements)
    if (std::string found = source_location(element, depth + 1); !found.empty()) return found;
  return "";
}

StatusOr<std::string> Symbols::string(uint64_t index, std::string_view what) {
  INSITU_ASSIGN_OR_RETURN(const Attribute* attribute, this->attribute(index));
  if (attribute->kind != Attribute::Kind::kString) return attribute_error(index, str_cat(what, " is not a string"));
  return attribute->text;
}

StatusOr<int64_t> Symbols::integer(uint64_t index, std::string_view what) {
  INSITU_ASSIGN_OR_RETURN(const Attribute* attribute, this->attribute(index));
  if (attribute->kind != Attribute::Kind::kInteger && attribute->kind != Attribute::Kind::kBoolean &&
      attribute->kind != Attribute::Kind::kEnum)
    return attribute_error(index, str_cat(what, " is not an integer"));
  return attribute->integer;
}

StatusOr<std::vector<int64_t>> Symbols::integers(uint64_t index, std::string_view what) {
  INSITU_ASSIGN_OR_RETURN(const Attribute* attribute, this->attribute(index));
  std::vector<int64_t> values;
  if (attribute->kind == Attribute::Kind::kArray) {
    for (uint64_t element : attribute->elements) {
      INSITU_ASSIGN_OR_RETURN(int64_t value, integer(element, what));
      values.push_back(value);
    }
    return values;
  }
  if (attribute->kind != Attribute::Kind::kTensor) return attribute_error(index, str_cat(what, " is not a list of integers"));
  INSITU_ASSIGN_OR_RETURN(const Type* type, this->type(attribute->type));
  // every element, row-major (the type's element count is bounded when it is decoded); a list
  // of attributes is short: a longer one than its bytes could hold is refused
  int64_t count = 1;
  if (type->kind == Type::Kind::kTensor)
    for (int64_t size : type->dimensions) count *= size < 0 ? 0 : size;
  if (count > (int64_t{1} << 24)) return attribute_error(index, str_cat(what, ": a list of ", count, " integers"));
  if (type->kind == Type::Kind::kTensor && type->element == PrimitiveType::kPred) {
    // booleans (window_reversal): one byte each, bit-packed, or a splat byte (0x00 or 0xFF)
    const std::vector<bool> bits = unpack_booleans(attribute->data, count);
    if (static_cast<int64_t>(bits.size()) != count)
      return attribute_error(index, str_cat(what, ": ", attribute->data.size(), " bytes for ", count, " booleans"));
    for (bool bit : bits) values.push_back(bit);
    return values;
  }
  if (type->kind != Type::Kind::kTensor || (type->element != PrimitiveType::kS64 && type->element != PrimitiveType::kS32))
    return attribute_error(index, str_cat(what, " is not a tensor of i64 or i32"));
  const int64_t width = byte_width(type->element);
  const bool splat = count > 1 && static_cast<int64_t>(attribute->data.size()) == width;
  if (count < 0 || (!splat && static_cast<int64_t>(attribute->data.size()) != count * width))
    return attribute_error(index, str_cat(what, ": ", attribute->data.size(), " bytes for ", count, " elements"));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    const int64_t at = splat ? 0 : i * width;
    for (int64_t b = 0; b < width; ++b) bits |= uint64_t{attribute->data[at + b]} << (8 * b);
    values.push_back(sign_extend(bits, width * 8));
  }
  return values;
}

StatusOr<Shape> Symbols::shape(uint64_t type_index, std::string_view what, int depth) {
  if (depth > kMaxDepth) return type_error(type_index, str_cat(what, ": tuples nested deeper than ", kMaxDepth));
  INSITU_ASSIGN_OR_RETURN(const Type* type, this->type(type_index));
  switch (type->kind) {
    case Type::Kind::kTensor:
      for (int64_t size : type->dimensions)
        if (size < 0) return invalid_argument(str_cat(what, ": a dynamic dimension (insitu needs static shapes)"));
      return Shape::array(type->element, type->dimensions);
    case Type::Kind::kToken: return Shape::token();
    case Type::Kind::kTuple: {
      std::vector<Shape> elements;
      for (uint64_t element : type->inputs) {
        INSITU_ASSIGN_OR_RETURN(Shape shape, this->shape(element, what, depth + 1));
        elements.push_back(std::move(shape));
      }
      return Shape::tuple(std::move(elements));
    }
    case Type::Kind::kOpaque: return invalid_argument(str_cat(what, ": ", type->description, " is not read"));
    default: return invalid_argument(str_cat(what, ": a type that is not a tensor, tuple or token"));
  }
}

}  // namespace insitu::stablehlo
