fn main() {
    glue::native::main(&sha1_blocks::ENDPOINT)
}
