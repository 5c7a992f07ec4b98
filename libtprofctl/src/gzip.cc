#include "tprof/gzip.h"

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

}  // namespace

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
