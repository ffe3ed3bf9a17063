#include "io/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "util/error.h"
#include "util/huge_pages.h"

namespace snapkv {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;

// Bounds-checked little-endian cursor over the file.
class Cursor {
 public:
  Cursor(const uint8_t* base, size_t size, const std::string& label)
      : base_(base), size_(size), label_(label) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  const uint8_t* take(uint64_t n, const char* what) {
    if (n > remaining()) {
      fail(ErrorKind::kBadFile, "{}: truncated GGUF file: {} needs {} bytes at offset {}, file has {}",
           label_, what, n, pos_, size_);
    }
    const uint8_t* p = base_ + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T read(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  std::string_view read_string(const char* what) {
    const uint64_t n = read<uint64_t>(what);
    return {reinterpret_cast<const char*>(take(n, what)), static_cast<size_t>(n)};
  }

 private:
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& label_;
};

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kF64); }

void read_scalar(Cursor& c, GgufValue& v) {
  switch (v.type) {
    case GgufValueType::kU8: v.u = c.read<uint8_t>("u8"); break;
    case GgufValueType::kI8: v.i = c.read<int8_t>("i8"); break;
    case GgufValueType::kU16: v.u = c.read<uint16_t>("u16"); break;
    case GgufValueType::kI16: v.i = c.read<int16_t>("i16"); break;
    case GgufValueType::kU32: v.u = c.read<uint32_t>("u32"); break;
    case GgufValueType::kI32: v.i = c.read<int32_t>("i32"); break;
    case GgufValueType::kU64: v.u = c.read<uint64_t>("u64"); break;
    case GgufValueType::kI64: v.i = c.read<int64_t>("i64"); break;
    case GgufValueType::kF32: v.f = c.read<float>("f32"); break;
    case GgufValueType::kF64: v.f = c.read<double>("f64"); break;
    case GgufValueType::kBool: v.u = c.read<uint8_t>("bool") != 0; break;
    default: break;
  }
  if (v.is_integer()) {
    // Keep both views of an integer so getters need not care about signedness.
    if (v.type == GgufValueType::kI8 || v.type == GgufValueType::kI16 ||
        v.type == GgufValueType::kI32 || v.type == GgufValueType::kI64) {
      v.u = static_cast<uint64_t>(v.i);
    } else {
      v.i = static_cast<int64_t>(v.u);
    }
  }
}

void read_value(Cursor& c, GgufValue& v, std::string_view key, int depth) {
  if (v.type == GgufValueType::kString) {
    v.str = c.read_string("string value");
    return;
  }
  if (v.type != GgufValueType::kArray) {
    read_scalar(c, v);
    return;
  }
  if (depth >= kMaxArrayDepth) fail(ErrorKind::kBadFile, "metadata '{}': arrays nested too deeply", key);
  const uint32_t et = c.read<uint32_t>("array type");
  if (!valid_value_type(et)) fail(ErrorKind::kBadFile, "metadata '{}': unknown array element type {}", key, et);
  v.elem_type = static_cast<GgufValueType>(et);
  v.count = c.read<uint64_t>("array length");
  if (const size_t es = gguf_scalar_size(v.elem_type); es != 0) {
    if (v.count > c.remaining() / es) {
      fail(ErrorKind::kBadFile, "metadata '{}': array of {} elements does not fit in the file", key, v.count);
    }
    v.data = c.take(v.count * es, "array data");
  } else if (v.elem_type == GgufValueType::kString) {
    // Each string needs at least its 8-byte length, which bounds a plausible count.
    if (v.count > c.remaining() / 8) {
      fail(ErrorKind::kBadFile, "metadata '{}': array of {} strings does not fit in the file", key, v.count);
    }
    v.strs.reserve(v.count);
    for (uint64_t i = 0; i < v.count; ++i) v.strs.push_back(c.read_string("array string"));
  } else {
    if (v.count > c.remaining() / 12) {
      fail(ErrorKind::kBadFile, "metadata '{}': array of {} arrays does not fit in the file", key, v.count);
    }
    v.items.resize(v.count);
    for (auto& item : v.items) {
      item.type = GgufValueType::kArray;
      read_value(c, item, key, depth + 1);
    }
  }
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

size_t gguf_scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kBool: return 1;
    case GgufValueType::kU16: case GgufValueType::kI16: return 2;
    case GgufValueType::kU32: case GgufValueType::kI32: case GgufValueType::kF32: return 4;
    case GgufValueType::kU64: case GgufValueType::kI64: case GgufValueType::kF64: return 8;
    default: return 0;
  }
}


std::string_view gguf_value_type_name(GgufValueType t) {
  static constexpr std::string_view kNames[] = {"u8",  "i8",  "u16",  "i16",    "u32", "i32", "f32",
                                                "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < std::size(kNames) ? kNames[i] : "?";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kU16:
    case GgufValueType::kI16: case GgufValueType::kU32: case GgufValueType::kI32:
    case GgufValueType::kU64: case GgufValueType::kI64: return true;
    default: return false;
  }
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path, Memory memory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::kBadFile, "{}: cannot open model file: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::kBadFile, "{}: not a regular file", path);
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size < 24) {
    ::close(fd);
    fail(ErrorKind::kBadFile, "{}: file of {} bytes is too small to be a GGUF model", path, size);
  }
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->size_ = size;
  f->memory_ = memory;
  if (memory == Memory::kMapped) {
    void* p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) fail(ErrorKind::kBadFile, "{}: mmap failed: {}", path, std::strerror(errno));
    f->base_ = static_cast<const uint8_t*>(p);
  } else {
    // Read into huge pages rather than mapped: decode streams every weight from RAM once per
    // token, and over 4 KiB page-cache pages each page is a TLB miss that also stops the hardware
    // prefetchers (util/huge_pages.h).
    try {
      f->base_ = static_cast<const uint8_t*>(allocate_huge_pages(size));
    } catch (const std::bad_alloc&) {
      ::close(fd);
      fail(ErrorKind::kBadFile, "{}: cannot allocate {} bytes for the model", path, size);
    }
    auto* dst = const_cast<uint8_t*>(f->base_);
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::pread(fd, dst + done, size - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string why = n < 0 ? std::strerror(errno) : "the file shrank while being read";
        ::close(fd);
        fail(ErrorKind::kBadFile, "{}: read failed at byte {}: {}", path, done, why);
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  f->parse_all();
  return f;
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t* data, size_t size, std::string label) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = std::move(label);
  f->base_ = data;
  f->size_ = size;
  f->parse_all();
  return f;
}

GgufFile::~GgufFile() {
  switch (memory_) {
    case Memory::kHugePages: free_huge_pages(const_cast<uint8_t*>(base_), size_); break;
    case Memory::kMapped: munmap(const_cast<uint8_t*>(base_), size_); break;
    case Memory::kCallers: break;
  }
}

void GgufFile::release(const uint8_t* p, size_t n) const {
  if (p < base_ || n > size_ || static_cast<size_t>(p - base_) > size_ - n) {
    fail(ErrorKind::kInvalidArgument, "{}: release of bytes outside the file", path_);
  }
  if (memory_ != Memory::kMapped) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  // A shared mapping of a file: the pages stay in the page cache and are read again from there.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void GgufFile::parse_all() {
  Cursor c(base_, size_, path_);
  const uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kMagic) fail(ErrorKind::kBadFile, "{}: not a GGUF file (wrong magic)", path_);
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) {
    fail(ErrorKind::kBadFile, "{}: GGUF version {} is not supported (only 2 and 3)", path_, version_);
  }
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // A key-value pair takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at
  // least 8 + 4 + 8 + 4 + 8. Counts beyond that are corrupt, whatever they claim.
  if (n_kv > c.remaining() / 13) fail(ErrorKind::kBadFile, "{}: absurd metadata count {}", path_, n_kv);
  if (n_tensors > c.remaining() / 32) fail(ErrorKind::kBadFile, "{}: absurd tensor count {}", path_, n_tensors);

  kv_.reserve(n_kv);
  for (uint64_t k = 0; k < n_kv; ++k) {
    const std::string_view key = c.read_string("metadata key");
    const uint32_t t = c.read<uint32_t>("metadata type");
    if (!valid_value_type(t)) fail(ErrorKind::kBadFile, "{}: metadata '{}' has unknown type {}", path_, key, t);
    GgufValue v;
    v.type = static_cast<GgufValueType>(t);
    read_value(c, v, key, 0);
    if (!kv_index_.emplace(key, kv_.size()).second) {
      fail(ErrorKind::kBadFile, "{}: duplicate metadata key '{}'", path_, key);
    }
    kv_.emplace_back(key, std::move(v));
  }
  if (const GgufValue* a = find("general.alignment")) {
    if (!a->is_integer() || a->u == 0 || a->u > 65536 || (a->u & (a->u - 1)) != 0) {
      fail(ErrorKind::kBadFile, "{}: general.alignment must be a power of two up to 65536", path_);
    }
    alignment_ = a->u;
  }

  tensors_.reserve(n_tensors);
  for (uint64_t ti = 0; ti < n_tensors; ++ti) {
    GgufTensor t;
    t.name = c.read_string("tensor name");
    const uint32_t n_dims = c.read<uint32_t>("tensor dims");
    if (n_dims == 0 || n_dims > kMaxDims) {
      fail(ErrorKind::kBadFile, "{}: tensor '{}' has {} dimensions (1..4 allowed)", path_, t.name, n_dims);
    }
    t.n_dims = static_cast<int>(n_dims);
    uint64_t n_elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = c.read<uint64_t>("tensor dim");
      if (ne == 0 || ne > (uint64_t{1} << 40) || n_elems > (uint64_t{1} << 40) / ne) {
        fail(ErrorKind::kBadFile, "{}: tensor '{}' has an absurd shape", path_, t.name);
      }
      n_elems *= ne;
      t.ne[d] = static_cast<int64_t>(ne);
    }
    const uint32_t type_id = c.read<uint32_t>("tensor type");
    const auto info = ggml_type_info(type_id);
    if (!info) fail(ErrorKind::kUnsupported, "{}: tensor '{}' has unknown type id {}", path_, t.name, type_id);
    t.type = info->type;
    if (t.ne[0] % info->block_elems != 0) {
      fail(ErrorKind::kBadFile, "{}: tensor '{}' row of {} is not a multiple of the {} block size {}", path_,
           t.name, t.ne[0], info->name, info->block_elems);
    }
    t.n_bytes = ggml_row_bytes(*info, t.ne[0]) * static_cast<uint64_t>(t.n_rows());
    t.offset = c.read<uint64_t>("tensor offset");
    if (t.offset % alignment_ != 0) {
      fail(ErrorKind::kBadFile, "{}: tensor '{}' offset {} is not aligned to {}", path_, t.name, t.offset, alignment_);
    }
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) {
      fail(ErrorKind::kBadFile, "{}: duplicate tensor name '{}'", path_, t.name);
    }
    tensors_.push_back(t);
  }

  data_offset_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  for (auto& t : tensors_) {
    if (data_offset_ > size_ || t.offset > size_ - data_offset_ || t.n_bytes > size_ - data_offset_ - t.offset) {
      fail(ErrorKind::kBadFile, "{}: tensor '{}' ({} bytes at offset {}) lies beyond the end of the file ({} bytes); "
           "the file is truncated or corrupt", path_, t.name, t.n_bytes, data_offset_ + t.offset, size_);
    }
    t.data = base_ + data_offset_ + t.offset;
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

namespace {
[[noreturn]] void missing(const std::string& path, std::string_view key) {
  fail(ErrorKind::kBadFile, "{}: required metadata '{}' is missing", path, key);
}
[[noreturn]] void wrong_type(const std::string& path, std::string_view key, const GgufValue& v, const char* want) {
  fail(ErrorKind::kBadFile, "{}: metadata '{}' is {} but {} was expected", path, key, gguf_value_type_name(v.type), want);
}
}  // namespace

uint64_t GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(path_, key);
  if (!v->is_integer()) wrong_type(path_, key, *v, "an integer");
  if (v->i < 0 && v->type != GgufValueType::kU64) {
    fail(ErrorKind::kBadFile, "{}: metadata '{}' is negative ({})", path_, key, v->i);
  }
  return v->u;
}

uint64_t GgufFile::get_uint(std::string_view key, uint64_t fallback) const {
  return has(key) ? get_uint(key) : fallback;
}

double GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(path_, key);
  if (v->is_float()) return v->f;
  if (v->is_integer()) return static_cast<double>(v->i);
  wrong_type(path_, key, *v, "a number");
}

double GgufFile::get_float(std::string_view key, double fallback) const {
  return has(key) ? get_float(key) : fallback;
}

bool GgufFile::get_bool(std::string_view key, bool fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->type != GgufValueType::kBool && !v->is_integer()) wrong_type(path_, key, *v, "a bool");
  return v->u != 0;
}

std::string_view GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(path_, key);
  if (v->type != GgufValueType::kString) wrong_type(path_, key, *v, "a string");
  return v->str;
}

std::string_view GgufFile::get_string(std::string_view key, std::string_view fallback) const {
  return has(key) ? get_string(key) : fallback;
}

const std::vector<std::string_view>& GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(path_, key);
  if (v->type != GgufValueType::kArray || v->elem_type != GgufValueType::kString) {
    wrong_type(path_, key, *v, "an array of strings");
  }
  return v->strs;
}

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(path_, key);
  if (v->type != GgufValueType::kArray) wrong_type(path_, key, *v, "an array of numbers");
  std::vector<float> out(v->count);
  for (uint64_t i = 0; i < v->count; ++i) {
    switch (v->elem_type) {
      case GgufValueType::kF32: out[i] = load<float>(v->data + 4 * i); break;
      case GgufValueType::kF64: out[i] = static_cast<float>(load<double>(v->data + 8 * i)); break;
      default: fail(ErrorKind::kBadFile, "{}: metadata '{}' is not an array of floats", path_, key);
    }
  }
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(path_, key);
  if (v->type != GgufValueType::kArray) wrong_type(path_, key, *v, "an array of integers");
  std::vector<int64_t> out(v->count);
  for (uint64_t i = 0; i < v->count; ++i) {
    const uint8_t* p = v->data;
    switch (v->elem_type) {
      case GgufValueType::kU8: out[i] = p[i]; break;
      case GgufValueType::kI8: out[i] = static_cast<int8_t>(p[i]); break;
      case GgufValueType::kBool: out[i] = p[i] != 0; break;
      case GgufValueType::kU16: out[i] = load<uint16_t>(p + 2 * i); break;
      case GgufValueType::kI16: out[i] = load<int16_t>(p + 2 * i); break;
      case GgufValueType::kU32: out[i] = load<uint32_t>(p + 4 * i); break;
      case GgufValueType::kI32: out[i] = load<int32_t>(p + 4 * i); break;
      case GgufValueType::kU64: out[i] = static_cast<int64_t>(load<uint64_t>(p + 8 * i)); break;
      case GgufValueType::kI64: out[i] = load<int64_t>(p + 8 * i); break;
      default: fail(ErrorKind::kBadFile, "{}: metadata '{}' is not an array of integers", path_, key);
    }
  }
  return out;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(std::string_view name) const {
  const GgufTensor* t = find_tensor(name);
  if (!t) fail(ErrorKind::kBadFile, "{}: required tensor '{}' is missing", path_, name);
  return *t;
}

}  // namespace snapkv
