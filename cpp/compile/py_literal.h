// The Python-literal text a blob's META section stores its build options in: what `repr()` of the
// Toolkit's values gives (3, True, 'w8a8', ['a', 'b'], {'conv1': 'cpu'}, [[0.0, 127.5]]). Blobs
// written by earlier versions hold exactly this text, so the one options codec
// (compile/options_codec.h) writes and reads it, in C++, with no Python involved.
//
// Writing matches CPython's repr for every value npuc records, with one documented difference:
// non-ASCII characters are always written as themselves (CPython escapes the few it deems not
// printable, e.g. U+00A0). Reading accepts CPython's escapes (\\ \' \" \n \r \t \xNN \uNNNN
// \UNNNNNNNN) so blobs with either spelling load.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace npuc::pyliteral {

std::string repr(bool v);
std::string repr(long long v);
std::string repr(double v);  // shortest round-trip digits, CPython's fixed/exponent choice
std::string repr(const std::string& s);
std::string repr(const std::vector<std::string>& v);
std::string repr(const std::vector<std::vector<double>>& v);
std::string repr(const std::map<std::string, std::string>& v);  // keys in sorted order

// Readers of one whole literal; each throws std::invalid_argument saying what was expected and at
// which character (the caller adds which option of which file).
bool readBool(const std::string& text);
long long readInt(const std::string& text);
std::string readString(const std::string& text);
std::vector<std::string> readStringList(const std::string& text);
std::vector<std::vector<double>> readFloatMatrix(const std::string& text);  // ints accepted
std::map<std::string, std::string> readStringDict(const std::string& text);

}  // namespace npuc::pyliteral
