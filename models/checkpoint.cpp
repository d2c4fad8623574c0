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

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_tensor(std::string& out, const std::string& name, const Tensor& t) {
  put<uint32_t>(out, static_cast<uint32_t>(name.size()));
  out += name;
  put<uint32_t>(out, static_cast<uint32_t>(t.rank()));
  for (int i = 0; i < t.rank(); ++i) put<int64_t>(out, t.dim(i));
  std::vector<float> v = t.to_vector();
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Bounds-checked reader over the payload.
struct Reader {
  const std::string& buf;
  size_t at;
  const std::string& path;
  template <class T>
  T get(const char* what) {
    if (at + sizeof(T) > buf.size())
      throw CheckpointError(path + ": truncated while reading " + what);
    T v;
    std::memcpy(&v, buf.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string bytes(size_t n, const char* what) {
    if (at + n > buf.size()) throw CheckpointError(path + ": truncated while reading " + what);
    std::string s = buf.substr(at, n);
    at += n;
    return s;
  }
};

}  // namespace

void save_checkpoint(const std::string& path, const ParameterSet& params, Adam* adam) {
  std::string payload;
  put<uint64_t>(payload, adam ? static_cast<uint64_t>(adam->steps()) : 0);
  const auto& ps = params.all();
  put<uint32_t>(payload, static_cast<uint32_t>(ps.size() * (adam ? 3 : 1)));
  for (const ag::Var& p : ps) put_tensor(payload, p->name, p->value);
  if (adam)
    for (size_t i = 0; i < ps.size(); ++i) {
      put_tensor(payload, "adam.m/" + ps[i]->name, adam->first_moments()[i]);
      put_tensor(payload, "adam.v/" + ps[i]->name, adam->second_moments()[i]);
    }
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

void load_checkpoint(const std::string& path, ParameterSet& params, Adam* adam) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path + ": cannot open checkpoint");
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < 8 || std::memcmp(file.data(), kMagic, 8) != 0)
    throw CheckpointError(path + ": not a mare checkpoint (bad magic number)");
  if (file.size() < 20) throw CheckpointError(path + ": truncated header");
  uint32_t version;
  uint64_t payload_bytes;
  std::memcpy(&version, file.data() + 8, 4);
  std::memcpy(&payload_bytes, file.data() + 12, 8);
  if (version != kCheckpointVersion)
    throw CheckpointError(path + ": checkpoint version " + std::to_string(version) +
                          ", this build reads version " + std::to_string(kCheckpointVersion));
  if (file.size() != 20 + payload_bytes + 8)
    throw CheckpointError(path + ": truncated or padded: header promises " +
                          std::to_string(payload_bytes) + " payload bytes, file has " +
                          std::to_string(file.size() >= 28 ? file.size() - 28 : 0));
  std::string payload = file.substr(20, payload_bytes);
  uint64_t stored;
  std::memcpy(&stored, file.data() + 20 + payload_bytes, 8);
  if (stored != fnv1a(payload)) throw CheckpointError(path + ": checksum mismatch (corrupted)");

  Reader r{payload, 0, path};
  uint64_t step = r.get<uint64_t>("step");
  uint32_t count = r.get<uint32_t>("tensor count");
  std::map<std::string, Tensor> tensors;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = r.get<uint32_t>("name length");
    std::string name = r.bytes(len, "name");
    uint32_t rank = r.get<uint32_t>("rank");
    if (rank > 4)
      throw CheckpointError(path + ": tensor '" + name + "' has rank " + std::to_string(rank));
    std::vector<int64_t> dims;
    for (uint32_t d = 0; d < rank; ++d) dims.push_back(r.get<int64_t>("dims"));
    Tensor t = Tensor::empty(Shape(dims));
    std::string data = r.bytes(static_cast<size_t>(t.numel()) * 4, "tensor data");
    std::memcpy(t.f32(), data.data(), data.size());
    tensors[name] = t;
  }
  auto take = [&](const std::string& name, Tensor& dst) {
    auto it = tensors.find(name);
    if (it == tensors.end())
      throw CheckpointError(path + ": no tensor '" + name + "' in checkpoint");
    if (it->second.shape() != dst.shape())
      throw CheckpointError(path + ": tensor '" + name + "' has shape " + it->second.shape().str() +
                            ", the model expects " + dst.shape().str());
    dst.copy_from(it->second);
  };
  const auto& ps = params.all();
  for (const ag::Var& p : ps) take(p->name, p->value);
  if (adam) {
    for (size_t i = 0; i < ps.size(); ++i) {
      take("adam.m/" + ps[i]->name, adam->first_moments()[i]);
      take("adam.v/" + ps[i]->name, adam->second_moments()[i]);
    }
    adam->set_steps(static_cast<int64_t>(step));
  }
}

}  // namespace mare
