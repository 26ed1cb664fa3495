fn main() {
    glue::native::main(&cpu::ENDPOINT)
}
