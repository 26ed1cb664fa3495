fn main() {
    glue::native::main(&io::ENDPOINT)
}
