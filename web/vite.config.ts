import { defineConfig } from 'vite'
import vue from '@vitejs/plugin-vue'

// `npm run dev` proxies the API (and the live WebSocket) to a running trainwatch server.
const target = process.env.TRAINWATCH_URL ?? 'http://127.0.0.1:18090'

export default defineConfig({
  base: '/',
  plugins: [vue()],
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    target: 'es2020',
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: {
      '/api': { target, changeOrigin: true, ws: true },
    },
  },
  preview: {
    proxy: {
      '/api': { target, changeOrigin: true, ws: true },
    },
  },
})
