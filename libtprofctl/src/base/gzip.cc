#include "tprof/base/gzip.h"

#include <zlib.h>

#include <cerrno>
#include <limits>

namespace tprof {

namespace {

// Owns a deflate stream.
class Deflater {
 public:
  Deflater() = default;
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  ~Deflater() {
    if (initialized_) deflateEnd(&stream_);
  }

  [[nodiscard]] int Init() {
    // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
    int rc = deflateInit2(&stream_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                          Z_DEFAULT_STRATEGY);
    initialized_ = rc == Z_OK;
    return rc;
  }
  z_stream* stream() { return &stream_; }

 private:
  z_stream stream_{};
  bool initialized_ = false;
};

Error ZlibError(int rc, const z_stream& s) {
  return Error::FromErrno(EIO, std::string("gzip compression failed: ") +
                                   (s.msg ? s.msg : zError(rc)));
}

// Owns an inflate stream.
class Inflater {
 public:
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() {
    if (initialized_) inflateEnd(&stream_);
  }

  [[nodiscard]] int Init() {
    int rc = inflateInit2(&stream_, 15 + 16);  // gzip framing only
    initialized_ = rc == Z_OK;
    return rc;
  }
  z_stream* stream() { return &stream_; }

 private:
  z_stream stream_{};
  bool initialized_ = false;
};

}  // namespace

Expected<std::string> Gunzip(std::string_view data, size_t max_bytes) {
  if (data.size() > std::numeric_limits<uInt>::max() ||
      max_bytes >= std::numeric_limits<uInt>::max())
    return Error::FromErrno(EOVERFLOW, "gzip decompression: more than 4 GiB at once");
  Inflater inflater;
  z_stream* s = inflater.stream();
  if (int rc = inflater.Init(); rc != Z_OK) return ZlibError(rc, *s);
  // One byte more than allowed tells "too big" from "exactly max_bytes".
  std::string out(max_bytes + 1, '\0');
  s->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s->avail_in = static_cast<uInt>(data.size());
  s->next_out = reinterpret_cast<Bytef*>(out.data());
  s->avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(s, Z_FINISH);
  if (rc == Z_STREAM_END && s->avail_in == 0 && s->total_out <= max_bytes) {
    out.resize(s->total_out);
    return out;
  }
  if (s->total_out > max_bytes)
    return Error::FromErrno(EFBIG, "gzip data larger than " + std::to_string(max_bytes) + " bytes");
  return Error::FromErrno(EBADMSG, std::string("not valid gzip data: ") +
                                       (s->msg ? s->msg : rc == Z_STREAM_END ? "trailing bytes"
                                                                              : zError(rc)));
}

Expected<std::string> Gzip(std::string_view data) {
  if (data.size() > std::numeric_limits<uInt>::max())
    return Error::FromErrno(EOVERFLOW, "gzip compression: more than 4 GiB at once");
  Deflater deflater;
  z_stream* s = deflater.stream();
  if (int rc = deflater.Init(); rc != Z_OK) return ZlibError(rc, *s);
  std::string out(deflateBound(s, static_cast<uLong>(data.size())), '\0');
  if (out.size() > std::numeric_limits<uInt>::max())
    return Error::FromErrno(EOVERFLOW, "gzip compression: more than 4 GiB at once");
  s->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s->avail_in = static_cast<uInt>(data.size());
  s->next_out = reinterpret_cast<Bytef*>(out.data());
  s->avail_out = static_cast<uInt>(out.size());
  // deflateBound() is enough for one Z_FINISH call.
  if (int rc = deflate(s, Z_FINISH); rc != Z_STREAM_END) return ZlibError(rc, *s);
  out.resize(s->total_out);
  return out;
}

}  // namespace tprof
