/* tree-sitter-python's external scanner, with its state saved in a wider form. The grammar's own
 * serialize() keeps each indentation width in one byte, so a block indented past column 255 (64
 * levels of four spaces, while CPython allows 99) reads back as a wrong width and valid code is
 * reported as a syntax error. The scanner itself is compiled unchanged from the grammar's sources;
 * only the two functions that save and restore its state are replaced, keeping widths in two
 * bytes (little-endian). */
#define tree_sitter_python_external_scanner_serialize crosstrain_python_scanner_serialize_one_byte
#define tree_sitter_python_external_scanner_deserialize crosstrain_python_scanner_deserialize_one_byte
#include "scanner.c"
#undef tree_sitter_python_external_scanner_serialize
#undef tree_sitter_python_external_scanner_deserialize

/* Layout: inside_f_string, delimiter count (at most 255), the delimiters, then each indentation
 * width after the implicit 0 as two bytes, as many as fit the buffer. */
unsigned tree_sitter_python_external_scanner_serialize(void *payload, char *buffer) {
  Scanner *scanner = (Scanner *)payload;
  unsigned size = 0;
  buffer[size++] = (char)scanner->inside_f_string;
  unsigned delimiters = scanner->delimiters.size > UINT8_MAX ? UINT8_MAX : scanner->delimiters.size;
  buffer[size++] = (char)delimiters;
  if (delimiters > 0) memcpy(&buffer[size], scanner->delimiters.contents, delimiters);
  size += delimiters;
  for (uint32_t k = 1; k < scanner->indents.size && size + 2 <= TREE_SITTER_SERIALIZATION_BUFFER_SIZE; ++k) {
    uint16_t width = *array_get(&scanner->indents, k);
    buffer[size++] = (char)(width & 0xff);
    buffer[size++] = (char)(width >> 8);
  }
  return size;
}

void tree_sitter_python_external_scanner_deserialize(void *payload, const char *buffer, unsigned length) {
  Scanner *scanner = (Scanner *)payload;
  array_delete(&scanner->delimiters);
  array_delete(&scanner->indents);
  array_push(&scanner->indents, 0);
  if (length == 0) return;
  unsigned size = 0;
  scanner->inside_f_string = (bool)buffer[size++];
  unsigned delimiters = size < length ? (uint8_t)buffer[size++] : 0;
  if (delimiters > 0 && size + delimiters <= length) {
    array_reserve(&scanner->delimiters, delimiters);
    scanner->delimiters.size = delimiters;
    memcpy(scanner->delimiters.contents, &buffer[size], delimiters);
  }
  size += delimiters;
  for (; size + 2 <= length; size += 2)
    array_push(&scanner->indents, (uint16_t)((uint8_t)buffer[size] | ((uint8_t)buffer[size + 1] << 8)));
}
