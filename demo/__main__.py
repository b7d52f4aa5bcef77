from demo.turns import main

main()
