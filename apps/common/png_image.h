#pragma once
// An RGB image as PNG bytes (8-bit, no interlace, zlib-compressed), for the raster plots the
// analyze command writes; and base64, to embed such an image in an SVG page with its axes.
#include <cstdint>
#include <string>
#include <vector>

namespace snapkv::cli {

// rgb: width * height * 3 bytes, row by row from the top.
std::string png_rgb(int width, int height, const std::vector<uint8_t>& rgb);

std::string base64(const std::string& bytes);

}  // namespace snapkv::cli
