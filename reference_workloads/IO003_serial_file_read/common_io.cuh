// Shared by IO003 baseline and optimized: the data file and the per-chunk kernel.
#pragma once
#include <fcntl.h>
#include <unistd.h>
#include "refwl.cuh"

// The "model": a compute-heavy per-element transform of one chunk.
__global__ void work(const float* __restrict__ x, float* __restrict__ y, long long n, int iters) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
#pragma unroll 8
  for (int k = 0; k < iters; ++k) v = v * 0.9999f + 0.0001f;
  y[i] = v;
}

struct DataFile {
  std::string path;
  int fd = -1;
  long long chunk_bytes = 0;
  int file_chunks = 0;
  DataFile(long long chunk_mb, int file_chunks_) : file_chunks(file_chunks_) {
    chunk_bytes = chunk_mb << 20;
    path = "/tmp/refwl_io003_" + std::to_string(getpid()) + ".bin";
    int wfd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (wfd < 0) { perror("open"); std::exit(4); }
    std::vector<float> buf(chunk_bytes / sizeof(float));
    for (int c = 0; c < file_chunks; ++c) {
      refwl::host_fill(buf.data(), (long long)buf.size(), 100 + c);
      if (write(wfd, buf.data(), chunk_bytes) != chunk_bytes) { perror("write"); std::exit(4); }
    }
    close(wfd);
    fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) { perror("open"); std::exit(4); }
  }
  ~DataFile() { close(fd); unlink(path.c_str()); }
  // Blocking read of chunk `c` (the I/O the GPU waits for in the baseline).
  void read_chunk(int c, float* dst) const {
    long long off = (long long)(c % file_chunks) * chunk_bytes, done = 0;
    while (done < chunk_bytes) {
      ssize_t r = pread(fd, reinterpret_cast<char*>(dst) + done, chunk_bytes - done, off + done);
      if (r <= 0) { perror("pread"); std::exit(4); }
      done += r;
    }
  }
};
