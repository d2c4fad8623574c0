#include "models/checkpoint.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

namespace mare {

namespace {

constexpr char kMagic[8] = {'M', 'A', 'R', 'E', 'C', 'K', 'P', 'T'};
constexpr size_t kHeaderBytes = 20;  // magic, version, payload_bytes
constexpr size_t kTrailerBytes = 8;  // checksum
const std::string kAdamM = "adam.m/", kAdamV = "adam.v/", kExtra = "extra/";

// FNV-1a, but from the offset basis 1469598103934665603: a digit short of the standard
// 14695981039346656037. Every checkpoint written so far carries a checksum from this
// basis, so it is part of the format and stays (it checks as well).
uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

uint32_t dtype_code(DType t) {
  return t == DType::f32 ? 0u : 1u;
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// Any device: the data goes through a host copy.
void put_tensor(std::string& out, const std::string& name, const Tensor& t) {
  put<uint32_t>(out, static_cast<uint32_t>(name.size()));
  out += name;
  put<uint32_t>(out, dtype_code(t.dtype()));
  put<uint32_t>(out, static_cast<uint32_t>(t.rank()));
  for (int i = 0; i < t.rank(); ++i) put<int64_t>(out, t.dim(i));
  const Tensor h = t.device() == Device::cpu ? t : t.to(Device::cpu);
  const void* data = h.dtype() == DType::f32 ? static_cast<const void*>(h.f32())
                                             : static_cast<const void*>(h.i32());
  out.append(static_cast<const char*>(data), h.nbytes());
}

// Bounds-checked reader over the payload.
struct Reader {
  const std::string& buf;
  size_t at;
  const std::string& path;
  size_t left() const { return buf.size() - at; }
  template <class T>
  T get(const char* what) {
    if (sizeof(T) > left()) throw CheckpointError(path + ": truncated while reading " + what);
    T v;
    std::memcpy(&v, buf.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  const char* bytes(size_t n, const char* what) {
    if (n > left()) throw CheckpointError(path + ": truncated while reading " + what);
    const char* p = buf.data() + at;
    at += n;
    return p;
  }
};

Tensor read_tensor(Reader& r, const std::string& name, const std::string& path) {
  const uint32_t code = r.get<uint32_t>("dtype");
  if (code > 1)
    throw CheckpointError(path + ": tensor '" + name + "' has dtype code " + std::to_string(code) +
                          ", expected 0 (float32) or 1 (int32)");
  const uint32_t rank = r.get<uint32_t>("rank");
  if (rank > static_cast<uint32_t>(Shape::kMaxRank))
    throw CheckpointError(path + ": tensor '" + name + "' has rank " + std::to_string(rank) +
                          ", at most " + std::to_string(Shape::kMaxRank) + " is allowed");
  std::vector<int64_t> dims;
  // The element count is bounded by the bytes left before anything is allocated.
  uint64_t numel = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t n = r.get<int64_t>("dims");
    if (n < 0 || static_cast<uint64_t>(n) > r.left())
      throw CheckpointError(path + ": tensor '" + name + "' has extent " + std::to_string(n) +
                            ", more than the payload holds");
    numel *= static_cast<uint64_t>(n);
    if (numel > r.left()) numel = r.left() + 1;  // saturate: refused below
    dims.push_back(n);
  }
  if (numel * 4 > r.left())
    throw CheckpointError(path + ": truncated while reading the data of tensor '" + name + "'");
  Tensor t = Tensor::empty(Shape(dims), Device::cpu, code == 0 ? DType::f32 : DType::i32);
  const char* data = r.bytes(t.nbytes(), "tensor data");
  void* dst = code == 0 ? static_cast<void*>(t.f32()) : static_cast<void*>(t.i32());
  std::memcpy(dst, data, t.nbytes());
  return t;
}

// The file's tensors by name, after the header, size and checksum checks.
struct Contents {
  uint64_t step = 0;
  std::map<std::string, Tensor> tensors;
};

Contents read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path + ": cannot open checkpoint");
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < 8 || std::memcmp(file.data(), kMagic, 8) != 0)
    throw CheckpointError(path + ": not a mare checkpoint (bad magic number)");
  if (file.size() < kHeaderBytes) throw CheckpointError(path + ": truncated header");
  uint32_t version;
  uint64_t payload_bytes;
  std::memcpy(&version, file.data() + 8, 4);
  std::memcpy(&payload_bytes, file.data() + 12, 8);
  if (version != kCheckpointVersion)
    throw CheckpointError(path + ": checkpoint version " + std::to_string(version) +
                          ", this build reads version " + std::to_string(kCheckpointVersion));
  const uint64_t body = file.size() - kHeaderBytes;  // payload and checksum, as found
  if (payload_bytes > body || body - payload_bytes < kTrailerBytes)
    throw CheckpointError(path + ": truncated: the header promises " +
                          std::to_string(payload_bytes) + " payload bytes and a checksum, the " +
                          std::to_string(file.size()) + "-byte file holds " + std::to_string(body) +
                          " bytes after the header");
  if (body - payload_bytes > kTrailerBytes)
    throw CheckpointError(path + ": " + std::to_string(body - payload_bytes - kTrailerBytes) +
                          " trailing bytes after the checksum (a padded file, or a corrupted "
                          "size field: the header promises " +
                          std::to_string(payload_bytes) + " payload bytes)");
  std::string payload = file.substr(kHeaderBytes, payload_bytes);
  uint64_t stored;
  std::memcpy(&stored, file.data() + kHeaderBytes + payload_bytes, 8);
  if (stored != fnv1a(payload)) throw CheckpointError(path + ": checksum mismatch (corrupted)");

  Contents c;
  Reader r{payload, 0, path};
  c.step = r.get<uint64_t>("step");
  const uint32_t count = r.get<uint32_t>("tensor count");
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t len = r.get<uint32_t>("name length");
    const char* p = r.bytes(len, "name");
    std::string name(p, len);
    if (name.empty())
      throw CheckpointError(path + ": tensor " + std::to_string(i) + " has no name");
    Tensor t = read_tensor(r, name, path);
    if (!c.tensors.emplace(name, t).second)
      throw CheckpointError(path + ": tensor '" + name + "' appears twice");
  }
  if (r.left() != 0)
    throw CheckpointError(path + ": " + std::to_string(r.left()) +
                          " unread payload bytes after the last tensor");
  return c;
}

// A pending copy: file tensor -> destination, checked before any is made.
struct Copy {
  const Tensor* src;
  Tensor* dst;
};

void check_match(const std::string& path, const std::string& name, const Tensor& src,
                 const Tensor& dst, const char* whose) {
  if (src.dtype() != dst.dtype())
    throw CheckpointError(path + ": tensor '" + name + "' is " + to_string(src.dtype()) + ", " +
                          whose + " expects " + to_string(dst.dtype()));
  if (src.shape() != dst.shape())
    throw CheckpointError(path + ": tensor '" + name + "' has shape " + src.shape().str() + ", " +
                          whose + " expects " + dst.shape().str());
}

}  // namespace

void save_checkpoint(const std::string& path, const ParameterSet& params, Adam* adam,
                     const CheckpointExtra* extra) {
  const auto& ps = params.all();
  if (adam &&
      (adam->first_moments().size() != ps.size() || adam->second_moments().size() != ps.size()))
    throw std::invalid_argument(path + ": the optimiser has moments for " +
                                std::to_string(adam->first_moments().size()) +
                                " parameters, the model has " + std::to_string(ps.size()));
  if (extra)
    for (const auto& [key, t] : *extra) {
      if (key.empty()) throw std::invalid_argument(path + ": extra state with an empty name");
      check_defined(t, ("save_checkpoint: extra state '" + key + "'").c_str());
    }
  std::string payload;
  put<uint64_t>(payload, adam ? static_cast<uint64_t>(adam->steps()) : 0);
  const size_t count = ps.size() * (adam ? 3 : 1) + (extra ? extra->size() : 0);
  put<uint32_t>(payload, static_cast<uint32_t>(count));
  for (const ag::Var& p : ps) put_tensor(payload, p->name, p->value);
  if (adam)
    for (size_t i = 0; i < ps.size(); ++i) {
      put_tensor(payload, kAdamM + ps[i]->name, adam->first_moments()[i]);
      put_tensor(payload, kAdamV + ps[i]->name, adam->second_moments()[i]);
    }
  if (extra)
    for (const auto& [key, t] : *extra) put_tensor(payload, kExtra + key, t);
  std::string file(kMagic, 8);
  put<uint32_t>(file, kCheckpointVersion);
  put<uint64_t>(file, payload.size());
  file += payload;
  put<uint64_t>(file, fnv1a(payload));

  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    out.flush();
    if (!out) throw CheckpointError(path + ": could not write checkpoint");
  }
  std::filesystem::rename(tmp, path);
}

void load_checkpoint(const std::string& path, ParameterSet& params, Adam* adam,
                     CheckpointExtra* extra) {
  Contents c = read_file(path);

  // Sort the file's names into the three sections.
  std::map<std::string, const Tensor*> file_params, file_adam, file_extra;
  for (const auto& [name, t] : c.tensors) {
    if (starts_with(name, kAdamM) || starts_with(name, kAdamV))
      file_adam[name] = &t;
    else if (starts_with(name, kExtra))
      file_extra[name.substr(kExtra.size())] = &t;
    else
      file_params[name] = &t;
  }

  std::vector<Copy> copies;
  const auto& ps = params.all();
  // Parameters: the same names both ways.
  std::map<std::string, size_t> model_names;
  for (size_t i = 0; i < ps.size(); ++i) model_names[ps[i]->name] = i;
  for (const auto& [name, t] : file_params)
    if (!model_names.count(name))
      throw CheckpointError(path + ": tensor '" + name +
                            "' in the checkpoint is not a parameter of the model");
  for (const ag::Var& p : ps) {
    auto it = file_params.find(p->name);
    if (it == file_params.end())
      throw CheckpointError(path + ": no tensor '" + p->name + "' in checkpoint");
    check_match(path, p->name, *it->second, p->value, "the model");
    copies.push_back({it->second, &p->value});
  }

  // Optimiser state: required when an Adam is given, skipped otherwise.
  if (adam) {
    if (file_adam.empty())
      throw CheckpointError(path +
                            ": the checkpoint holds no optimizer state (saved without "
                            "Adam), so training cannot resume from it");
    if (adam->first_moments().size() != ps.size() || adam->second_moments().size() != ps.size())
      throw std::invalid_argument(path + ": the optimiser has moments for " +
                                  std::to_string(adam->first_moments().size()) +
                                  " parameters, the model has " + std::to_string(ps.size()));
    for (const auto& [name, t] : file_adam)
      if (!model_names.count(name.substr(kAdamM.size())))
        throw CheckpointError(path + ": optimizer state '" + name +
                              "' matches no parameter of the model");
    auto take = [&](const std::string& name, Tensor& dst) {
      auto it = file_adam.find(name);
      if (it == file_adam.end())
        throw CheckpointError(path + ": no optimizer state '" + name + "' in checkpoint");
      check_match(path, name, *it->second, dst, "the optimiser");
      copies.push_back({it->second, &dst});
    };
    for (size_t i = 0; i < ps.size(); ++i) {
      take(kAdamM + ps[i]->name, adam->first_moments()[i]);
      take(kAdamV + ps[i]->name, adam->second_moments()[i]);
    }
  }

  // Extra state: exactly the keys of the map given.
  if (!extra && !file_extra.empty())
    throw CheckpointError(path + ": the checkpoint holds extra state ('" + kExtra +
                          file_extra.begin()->first + "', " + std::to_string(file_extra.size()) +
                          " in all) but none was asked for");
  std::vector<std::pair<Tensor*, const Tensor*>> fresh;  // undefined entries: take the file's
  if (extra) {
    for (const auto& [key, t] : file_extra)
      if (!extra->count(key))
        throw CheckpointError(path + ": extra state '" + kExtra + key +
                              "' in the checkpoint is not expected by the model");
    for (auto& [key, dst] : *extra) {
      auto it = file_extra.find(key);
      if (it == file_extra.end())
        throw CheckpointError(path + ": no extra state '" + kExtra + key + "' in checkpoint");
      if (dst.defined()) {
        check_match(path, kExtra + key, *it->second, dst, "the model");
        copies.push_back({it->second, &dst});
      } else {
        fresh.push_back({&dst, it->second});
      }
    }
  }

  // Everything matched: now change the model (copies go to each tensor's device).
  for (const Copy& cp : copies) cp.dst->copy_from(*cp.src);
  for (auto& [dst, src] : fresh) *dst = *src;
  if (adam) adam->set_steps(static_cast<int64_t>(c.step));
}

}  // namespace mare
