#include "tprof/base/gzip.h"

#include <zlib.h>

#include <algorithm>
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
  if (data.size() > std::numeric_limits<uInt>::max())
    return Error::FromErrno(EOVERFLOW, "gzip decompression: more than 4 GiB of input at once");
  Inflater inflater;
  z_stream* s = inflater.stream();
  if (int rc = inflater.Init(); rc != Z_OK) return ZlibError(rc, *s);
  s->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s->avail_in = static_cast<uInt>(data.size());
  // The output grows as inflate fills it, up to one byte more than allowed
  // (which tells "too big" from "exactly max_bytes"): a large bound costs
  // nothing until the data needs it.
  const size_t limit = max_bytes == std::numeric_limits<size_t>::max() ? max_bytes : max_bytes + 1;
  std::string out;
  size_t used = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (used == out.size()) {
      if (out.size() >= limit) break;
      const size_t want = std::max<size_t>(out.size() * 2, std::max<size_t>(data.size() * 4, 1 << 16));
      out.resize(std::min(want, limit));
    }
    const size_t room = std::min<size_t>(out.size() - used, std::numeric_limits<uInt>::max());
    s->next_out = reinterpret_cast<Bytef*>(out.data() + used);
    s->avail_out = static_cast<uInt>(room);
    rc = inflate(s, Z_NO_FLUSH);
    used += room - s->avail_out;
    if (rc == Z_BUF_ERROR && s->avail_out == 0) rc = Z_OK;  // full: grow and go on
  }
  if (used > max_bytes)
    return Error::FromErrno(EFBIG, "gzip data larger than " + std::to_string(max_bytes) + " bytes");
  if (rc == Z_STREAM_END && s->avail_in == 0) {
    out.resize(used);
    return out;
  }
  return Error::FromErrno(EBADMSG, std::string("not valid gzip data: ") +
                                       (s->msg                ? s->msg
                                        : rc == Z_STREAM_END ? "trailing bytes"
                                        : rc == Z_BUF_ERROR  ? "cut short"
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
