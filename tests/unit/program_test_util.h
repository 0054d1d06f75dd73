// Helpers for the program IR tests: a minimal protobuf wire encoder (so tests can write hostile
// ProgramDesc bytes by hand, independently of the generated code) and a .npy reader.
#pragma once

#include <oar/core/error.h>
#include <oar/core/tensor.h>
#include <oar/ir/program.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace pbw {

inline std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
inline std::string tag(int field, int wire) { return varint((static_cast<uint64_t>(field) << 3) | wire); }
inline std::string u(int field, int64_t v) { return tag(field, 0) + varint(static_cast<uint64_t>(v)); }
inline std::string b(int field, const std::string& bytes) {
  return tag(field, 2) + varint(bytes.size()) + bytes;
}

// ProgramDesc pieces (field numbers as in framework/proto/framework.proto).
inline std::string tensor_desc(int dtype, std::vector<int64_t> dims) {
  std::string s = u(1, dtype);
  for (auto d : dims) s += u(2, d);
  return s;
}
inline std::string lod_tensor_var(const std::string& name, int dtype, std::vector<int64_t> dims,
                                  bool persistable = false) {
  std::string type = u(1, 7) + b(3, b(1, tensor_desc(dtype, dims)));
  return b(1, name) + b(2, type) + u(3, persistable);
}
inline std::string op_var(const std::string& slot, std::vector<std::string> args) {
  std::string s = b(1, slot);
  for (auto& a : args) s += b(2, a);
  return s;
}
inline std::string op(const std::string& type, std::vector<std::string> inputs,
                      std::vector<std::string> outputs, std::vector<std::string> attrs = {}) {
  // Field-number order, as protobuf writes it: inputs=1, outputs=2, type=3, attrs=4.
  std::string s;
  for (auto& i : inputs) s += b(1, i);
  for (auto& o : outputs) s += b(2, o);
  s += b(3, type);
  for (auto& a : attrs) s += b(4, a);
  return s;
}
inline std::string block(int idx, int parent, std::vector<std::string> vars, std::vector<std::string> ops) {
  std::string s = u(1, idx) + u(2, parent);
  for (auto& v : vars) s += b(3, v);
  for (auto& o : ops) s += b(4, o);
  return s;
}
inline std::string program(std::vector<std::string> blocks) {
  std::string s;
  for (auto& bl : blocks) s += b(1, bl);
  return s;
}

}  // namespace pbw

// A .npy file (version 1.x/2.x, little-endian, C order).
struct Npy {
  std::string descr;
  std::vector<int64_t> shape;
  std::string data;
};

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

inline Npy read_npy(const std::string& path) {
  std::string s = read_all(path);
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error("not npy: " + path);
  size_t hlen = 0, hstart = 0;
  if (s[6] == 1) {
    hlen = static_cast<uint8_t>(s[8]) | (static_cast<uint8_t>(s[9]) << 8);
    hstart = 10;
  } else {
    uint32_t l;
    std::memcpy(&l, s.data() + 8, 4);
    hlen = l;
    hstart = 12;
  }
  std::string header = s.substr(hstart, hlen);
  Npy n;
  size_t d = header.find("'descr': '") + 10;
  n.descr = header.substr(d, header.find('\'', d) - d);
  if (header.find("'fortran_order': False") == std::string::npos) throw std::runtime_error("fortran npy");
  size_t p = header.find("'shape': (") + 10, e = header.find(')', p);
  std::string dims = header.substr(p, e - p);
  std::stringstream ss(dims);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item.find_first_not_of(' ') != std::string::npos) n.shape.push_back(std::stoll(item));
  n.data = s.substr(hstart + hlen);
  return n;
}

// A file of the PaddlePaddle-made fixtures (tests/fixtures/paddle, see make_fixtures.py).
inline std::string fixture(const std::string& rel) {
  return std::string(OAR_SOURCE_DIR) + "/tests/fixtures/paddle/" + rel;
}

// A float32 .npy as a CPU tensor.
inline oar::Tensor npy_tensor(const Npy& n) {
  if (n.descr != "<f4") throw std::runtime_error("npy_tensor: expected float32 (<f4), got " + n.descr);
  return oar::Tensor::from_host(n.data.data(), oar::Dims(n.shape), oar::DType::kFloat32);
}

// Appends an op to block `g` (hand-built test programs).
inline void add_op(oar::ir::Block& g, const std::string& type, oar::ir::Slots in, oar::ir::Slots out,
                   std::vector<std::pair<std::string, oar::ir::Attribute>> attrs = {}) {
  oar::ir::OpDesc o;
  o.type = type;
  o.inputs = std::move(in);
  o.outputs = std::move(out);
  o.attrs = std::move(attrs);
  g.append_op(std::move(o));
}
