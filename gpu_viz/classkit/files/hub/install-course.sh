# todo
